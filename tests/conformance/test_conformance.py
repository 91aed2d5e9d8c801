"""Every scenario of tests/conformance/, run against Apache Kafka 4.4 and Odradek; their
answers must agree (see harness.py), but for the differences the README lists."""

from __future__ import annotations

import pytest
from helpers.broker import Broker
from helpers.reference_kafka import ReferenceKafka

from conformance import scenarios_topics  # noqa: F401 - registers its scenarios
from conformance.harness import SCENARIOS, differences, execute, listed_differences


@pytest.mark.parametrize("scenario_id", sorted(SCENARIOS))
def test_answers_as_kafka_does(
    scenario_id: str, kafka44: ReferenceKafka, shared_broker: Broker
) -> None:
    scenario = SCENARIOS[scenario_id]
    kafka = execute(scenario, kafka44.bootstrap)
    odradek = execute(scenario, shared_broker.bootstrap)
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
