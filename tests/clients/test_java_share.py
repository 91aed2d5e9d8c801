"""KafkaShareConsumer (the Java client 4.4) on share groups: implicit and explicit
acknowledgement, two members on one partition, records released by a member that closes.
Each scenario (tests/java/ShareScenarios.java, one JVM) runs against Odradek and Apache
Kafka 4.4 at once; the deliveries and the group's lag must be the same on both.

Kafka writes a share-partition's start offset as it was before the acknowledgements of
that write moved it, so the start offset it reports lags behind; the lag (0 once every
record is done with) is what the tests compare."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import java
from helpers.both_brokers import on_both
from helpers.broker import Broker
from helpers.reference_kafka import ReferenceKafka

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", autouse=True)
def _java_tool() -> None:
    java.command(["--help"])  # compile once, before the scenarios' threads


def share_scenario(bootstrap: str, name: str, topic: str, group: str) -> list[dict[str, Any]]:
    args = ["share-scenario", "--bootstrap", bootstrap, "--scenario", name]
    result = java.run([*args, "--topic", topic, "--group", group], timeout=240)
    failed = [e for e in result.events if e["event"] == "commit-failed"]
    assert not failed, failed
    return result.lines


def deliveries(lines: list[dict[str, Any]], consumer: str | None = None) -> list[tuple]:
    """(consumer, offset, value, delivery count, acknowledgement) in the order they came."""
    return [
        (x["consumer"], x["offset"], x["value"], x["delivery_count"], x["ack"])
        for x in lines
        if "consumer" in x and "event" not in x and consumer in (None, x["consumer"])
    ]


def lag(lines: list[dict[str, Any]]) -> int:
    (offsets,) = [x for x in lines if x.get("event") == "offsets"]
    return int(offsets["lag"])


def test_implicit_acknowledgement(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    def scenario(bootstrap: str) -> tuple[list[tuple], int]:
        lines = share_scenario(bootstrap, "implicit", unique_topic, unique_group)
        got = deliveries(lines)
        assert got == [("a", i, f"v-{i}", 1, "none") for i in range(10)]
        assert lag(lines) == 0  # all acknowledged (accepted) by the next poll or commitSync
        return got, lag(lines)

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]


def test_explicit_accept_release_reject(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    def scenario(bootstrap: str) -> tuple[list[tuple], int]:
        lines = share_scenario(bootstrap, "explicit", unique_topic, unique_group)
        got = deliveries(lines)
        plan = ["accept", "release", "reject", "accept", "release", "accept"]
        first = [("a", i, f"v-{i}", 1, plan[i]) for i in range(6)]
        # the released records come back once more, counted; the rejected one never does
        again = [("a", 1, "v-1", 2, "accept"), ("a", 4, "v-4", 2, "accept")]
        assert got == first + again
        assert lag(lines) == 0
        return got, lag(lines)

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]


def test_two_members_share_one_partition(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    def scenario(bootstrap: str) -> tuple[list[tuple], int, int]:
        lines = share_scenario(bootstrap, "two-members", unique_topic, unique_group)
        got = deliveries(lines)
        # at most 5 records a poll, acquired in record-limit mode: while a holds 0-4, b
        # gets five others, 5-9 or, when a's consumer has already fetched those ahead
        # (Kafka's client may, on a busy machine), the next five
        held_a = [x for x in got if x[4] == "none" and x[0] == "a"]
        held_b = [x[1] for x in got if x[4] == "none" and x[0] == "b"]
        assert held_a == [("a", i, f"v-{i}", 1, "none") for i in range(5)]
        assert len(held_b) == 5 and held_b[0] >= 5
        assert held_b == list(range(held_b[0], held_b[0] + 5))
        # then they take turns: every record delivered once, and accepted
        assert sorted(x[1] for x in got) == list(range(20))
        assert all(x[3] == 1 for x in got)
        later = [x for x in got if x[4] == "accept"]
        assert {x[0] for x in later} == {"a", "b"}
        assert lag(lines) == 0
        return held_a, len(held_b), lag(lines)

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]


def test_records_released_when_a_member_closes(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    def scenario(bootstrap: str) -> tuple[list[tuple], int]:
        lines = share_scenario(bootstrap, "release-on-close", unique_topic, unique_group)
        events = [x["event"] for x in lines if "event" in x]
        assert events == ["b-assigned", "a-closed", "offsets"]
        closed = lines.index({"event": "a-closed"})
        # a held every record unacknowledged; b, assigned the same partition, got none
        # of them until a closed, then each once more (delivery count 2)
        assert deliveries(lines[:closed]) == [("a", i, f"v-{i}", 1, "none") for i in range(10)]
        after = deliveries(lines[closed:])
        assert after == [("b", i, f"v-{i}", 2, "accept") for i in range(10)]
        assert lag(lines) == 0
        return deliveries(lines), lag(lines)

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]
