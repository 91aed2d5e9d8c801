"""DescribeConfigs' documentation on Apache Kafka 4.4 and Odradek side by side: asked
for (include_documentation, v3+), every config Kafka documents is documented by Odradek
too, where Odradek lists it (each broker in its own words: Odradek's say what the config
does in Odradek, Kafka's are not copied); not asked for, both answer null; a logger's
documentation is empty on both either way."""

from __future__ import annotations

from typing import Any

from helpers.both_brokers import KAFKA, ODRADEK, on_both
from helpers.broker import Broker
from helpers.reference_kafka import ReferenceKafka
from helpers.wire import WireClient

from conformance.harness import Run
from conformance.scenarios_topics import quietly_create
from odradek.broker.settings.config import is_kafka_setting

DESCRIBE_CONFIGS = 32
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
NODE = "0"  # both brokers of the pair are node 0
KINDS = {TOPIC: "topic", BROKER: "broker", GROUP: "group", CLIENT_METRICS: "client-metrics"}

# config name -> its documentation, for each kind of resource
Described = dict[str, dict[str, str | None]]


def describe(
    client: WireClient, resource_type: int, name: str, documentation: bool, version: int = 4
) -> dict[str, str | None]:
    body: dict[str, Any] = {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}
        ],
        "include_synonyms": False,
    }
    if version >= 3:
        body["include_documentation"] = documentation
    answer = client.call(DESCRIBE_CONFIGS, version, body)
    (result,) = answer.results
    assert result.error_code == 0, result
    return {c.name: getattr(c, "documentation", None) for c in result.configs}


def described(documentation: bool) -> Any:
    """What a broker answers for a topic, itself, a group and a client-metrics
    subscription (none of them set) and its loggers: {kind: {config: documentation}}."""

    def scenario(bootstrap: str) -> Described:
        run = Run(bootstrap)
        try:
            topic = run.name("documented")
            quietly_create(run, topic)
            client = run.client()
            names = {
                TOPIC: topic,
                BROKER: NODE,
                GROUP: run.name("group"),
                CLIENT_METRICS: run.name("subscription"),
            }
            found = {
                KINDS[kind]: describe(client, kind, name, documentation)
                for kind, name in names.items()
            }
            found["logger"] = describe(client, BROKER_LOGGER, NODE, documentation)
            return found
        finally:
            run.close()

    return scenario


def test_every_config_kafka_documents_odradek_documents_too(
    kafka44: ReferenceKafka, shared_broker: Broker
) -> None:
    answers = on_both(described(documentation=True), shared_broker, kafka44)
    kafka, odradek = answers[KAFKA], answers[ODRADEK]
    for kind in KINDS.values():
        assert odradek[kind], f"Odradek lists no {kind} config"
        assert kafka[kind] and all(kafka[kind].values()), f"Kafka documents every {kind} config"
        unknown = set(odradek[kind]) - set(kafka[kind])
        assert not unknown, f"{kind} configs Kafka 4.4 does not list: {sorted(unknown)}"
        undocumented = sorted(
            name for name, text in odradek[kind].items() if kafka[kind][name] and not text
        )
        assert not undocumented, f"{kind} configs Kafka documents, Odradek not: {undocumented}"
    for broker in (kafka, odradek):
        assert broker["logger"] and set(broker["logger"].values()) == {""}


def test_no_documentation_unless_asked_for(kafka44: ReferenceKafka, shared_broker: Broker) -> None:
    answers = on_both(described(documentation=False), shared_broker, kafka44)
    for answer in answers.values():
        for kind in KINDS.values():
            assert answer[kind] and set(answer[kind].values()) == {None}, kind
        assert set(answer["logger"].values()) == {""}


def test_versions_before_documentation(kafka44: ReferenceKafka, shared_broker: Broker) -> None:
    """v1 and v2 have neither the request's flag nor the answer's field."""

    def scenario(bootstrap: str) -> list[int]:
        with WireClient(bootstrap) as client:
            return [len(describe(client, BROKER, NODE, False, version)) for version in (1, 2)]

    answers = on_both(scenario, shared_broker, kafka44)
    assert all(counts[0] == counts[1] > 0 for counts in answers.values()), answers


def test_every_broker_setting_kafka_describes_odradek_accepts(kafka44: ReferenceKafka) -> None:
    """A server.properties written for Kafka 4.4 starts Odradek: every broker setting
    Kafka describes is one Odradek reads or knows it does not read."""
    client = WireClient(kafka44.bootstrap)
    try:
        names = describe(client, BROKER, NODE, documentation=False)
    finally:
        client.close()
    assert len(names) > 300
    assert [name for name in sorted(names) if not is_kafka_setting(name)] == []
