"""Every scenario of tests/conformance/, run against Apache Kafka 4.4 and Odradek; their
answers must agree (see harness.py), but for the differences the README lists."""

from __future__ import annotations

import pytest
from helpers.broker import Broker
from helpers.reference_kafka import ReferenceKafka
from helpers.wire import WireClient

from conformance import (  # noqa: F401 - registers their scenarios
    scenarios_acls,
    scenarios_admin,
    scenarios_classic_groups,
    scenarios_client_metrics,
    scenarios_cluster,
    scenarios_configs,
    scenarios_consumer_groups,
    scenarios_data,
    scenarios_delegation_tokens,
    scenarios_features,
    scenarios_fetch,
    scenarios_group_admin,
    scenarios_groups,
    scenarios_log_dirs,
    scenarios_new_groups,
    scenarios_offsets,
    scenarios_produce,
    scenarios_quotas,
    scenarios_security,
    scenarios_share,
    scenarios_share_admin,
    scenarios_streams_groups,
    scenarios_streams_v1,
    scenarios_telemetry,
    scenarios_topic_partitions,
    scenarios_topics,
    scenarios_transactions,
    scenarios_transactions_v2,
    scenarios_txn_admin,
)
from conformance.harness import (
    SCENARIOS,
    differences,
    execute,
    kinds_of_answers,
    listed_differences,
)

API_VERSIONS_KEY = pytest.StashKey[list[str]]()
# api key -> the kinds of Kafka's answers to it ("valid", "invalid") the scenarios saw
COVERED: dict[int, set[str]] = {}
SCENARIOS_RUN: set[str] = set()


@pytest.mark.parametrize("scenario_id", sorted(SCENARIOS))
def test_answers_as_kafka_does(
    scenario_id: str,
    kafka44: ReferenceKafka,
    shared_broker: Broker,
    request: pytest.FixtureRequest,
) -> None:
    scenario = SCENARIOS[scenario_id]
    if scenario.secure:
        secure_kafka, secure_odradek = request.getfixturevalue("secure_pair")
        kafka = execute(scenario, secure_kafka.bootstrap, secure_kafka.sasl_bootstrap)
        odradek = execute(scenario, secure_odradek.bootstrap, secure_odradek.sasl_bootstrap)
    else:
        kafka = execute(scenario, kafka44.bootstrap)
        odradek = execute(scenario, shared_broker.bootstrap)
    for api, kind in kinds_of_answers(kafka):
        COVERED.setdefault(api, set()).add(kind)
    SCENARIOS_RUN.add(scenario_id)
    found = list(differences(kafka, odradek))
    listed = listed_differences()
    if scenario_id in listed:
        assert found, (
            f"{scenario_id} answers as Kafka does now: remove its row from the README's "
            "'Differences from Apache Kafka'"
        )
    else:
        assert not found, f"{scenario.about}:\n" + "\n".join(found)


def test_the_listed_differences_name_scenarios() -> None:
    unknown = set(listed_differences()) - set(SCENARIOS)
    assert not unknown, f"the README lists differences of no scenario: {sorted(unknown)}"


# what Kafka 4.4 serves and Odradek's node of its own does not: the membership of a KRaft
# quorum
QUORUM_APIS = {55, 64, 80, 81, 94}


def test_api_versions_side_by_side(
    kafka44: ReferenceKafka, shared_broker: Broker, request: pytest.FixtureRequest
) -> None:
    """The APIs and version ranges one broker serves and the other does not (printed
    at the end of the run); the versions both serve must all be readable by both."""
    ranges = {}
    for name, bootstrap in (("kafka", kafka44.bootstrap), ("odradek", shared_broker.bootstrap)):
        with WireClient(bootstrap) as client:
            answer = client.call(
                18, 3, {"client_software_name": "t", "client_software_version": "1"}
            )
        assert answer.error_code == 0
        ranges[name] = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
    lines = []
    for key in sorted(set(ranges["kafka"]) | set(ranges["odradek"])):
        kafka, odradek = ranges["kafka"].get(key), ranges["odradek"].get(key)
        if kafka != odradek:
            lines.append(f"  api {key:>3}: Kafka 4.4 {kafka or '-'}, Odradek {odradek or '-'}")
    request.config.stash[API_VERSIONS_KEY] = lines
    both = set(ranges["kafka"]) & set(ranges["odradek"])
    assert {k: ranges["kafka"][k] for k in both} == {k: ranges["odradek"][k] for k in both}
    assert set(ranges["odradek"]) <= set(ranges["kafka"])
    assert set(ranges["kafka"]) - set(ranges["odradek"]) == QUORUM_APIS


# APIs a client cannot make Kafka 4.4 refuse: only their valid answer is required
NEVER_REFUSED = {
    16: "ListGroups: unknown state and type filters match nothing; its only errors are a "
    "coordinator not yet loaded or not available, which a scenario cannot bring about",
}


# APIs Kafka 4.4 on its default configuration refuses whatever they ask: only their
# invalid answer is required
NEVER_ACCEPTED = {
    93: "StreamsGroupTopologyDescriptionUpdate: without a topology-description plugin "
    "(Kafka's default) every push is answered UNSUPPORTED_VERSION",
}


def test_every_advertised_api_has_a_valid_and_an_invalid_scenario(
    shared_broker: Broker,
) -> None:
    """Runs after the scenarios (it is last in the file): every API Odradek advertises
    was answered at least once without an error and once with one, by Kafka."""
    missing_runs = set(SCENARIOS) - SCENARIOS_RUN
    assert not missing_runs, (
        f"{len(missing_runs)} scenarios did not run in this session: run the whole "
        "conformance suite to check its coverage"
    )
    with WireClient(shared_broker.bootstrap) as client:
        answer = client.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    advertised = sorted(a.api_key for a in answer.api_keys)
    lacking = [
        f"api {key}: no {kind} scenario"
        for key in advertised
        for kind in ("valid", "invalid")
        if kind not in COVERED.get(key, set())
        and not (kind == "invalid" and key in NEVER_REFUSED)
        and not (kind == "valid" and key in NEVER_ACCEPTED)
    ]
    print(f"{len(SCENARIOS)} scenarios; {len(advertised)} APIs advertised; {len(lacking)} gaps")
    assert not lacking, "\n".join(lacking)
