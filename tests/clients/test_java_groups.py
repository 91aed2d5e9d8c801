"""Consumer groups through the Java client 4.4: two members of a group of each protocol
(classic and consumer) split the partitions, commit and hand over; the Admin client
lists groups of every type with each filter and describes them. Each scenario
(tests/java/GroupScenarios.java, one JVM) runs against Odradek and Apache Kafka 4.4 at
once and must come out the same on both."""

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


def events(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {x.pop("event"): x for x in lines if "event" in x}
    return out


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_two_members_split_commit_and_resume(
    shared_broker: Broker,
    kafka44: ReferenceKafka,
    unique_topic: str,
    unique_group: str,
    protocol: str,
) -> None:
    def scenario(bootstrap: str) -> dict[str, Any]:
        args = ["group-scenario", "--bootstrap", bootstrap, "--protocol", protocol]
        result = java.run([*args, "--topic", unique_topic, "--group", unique_group], timeout=240)
        ev = events(result.lines)
        a, b = set(ev["split"]["a"]), set(ev["split"]["b"])
        assert len(a) == len(b) == 2 and a | b == {0, 1, 2, 3}
        # 10 records a partition, each read once, by the member that holds the partition
        consumed = ev["consumed"]
        assert {int(p) for p in consumed["a"]} == a and {int(p) for p in consumed["b"]} == b
        for offsets in [*consumed["a"].values(), *consumed["b"].values()]:
            assert offsets == list(range(10))
        # b left: a took its partitions over from b's commits, reading only what came later
        assert ev["resumed"]["a"] == {str(p): list(range(10, 15)) for p in range(4)}
        assert ev["committed"]["offsets"] == {str(p): 15 for p in range(4)}
        kind = protocol.capitalize()
        assert ev["described"] == {"type": kind, "state": "Empty", "members": 0}
        return {
            "sizes": sorted([len(a), len(b)]),
            "resumed": ev["resumed"],
            "committed": ev["committed"],
            "described": ev["described"],
        }

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]


def listing(group: str, kind: str, state: str) -> dict[str, Any]:
    protocol = "share" if kind == "Share" else "consumer"
    return {"group": group, "type": kind, "protocol": protocol, "state": state, "simple": False}


def test_list_and_describe_groups_of_every_type(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    classic, consumer, share = (f"{unique_group}-{k}" for k in ("classic", "consumer", "share"))
    live = [
        listing(classic, "Classic", "Stable"),
        listing(consumer, "Consumer", "Stable"),
        listing(share, "Share", "Stable"),
    ]
    member = {"assignment": [f"{unique_topic}:0"]}

    def scenario(bootstrap: str) -> dict[str, Any]:
        args = ["every-group-type", "--bootstrap", bootstrap]
        result = java.run([*args, "--topic", unique_topic, "--group", unique_group], timeout=240)
        ev = events(result.lines)
        assert ev["listed"] == {
            "default": live,
            "consumer_groups": live[:2],
            "share_groups": live[2:],
            "classic": live[:1],
            "consumer": live[1:2],
            "share": live[2:],
            "stable": live,
            "empty": [],
        }
        described = ev["described"]
        assert described["classic"] == {
            "group": classic,
            "type": "Classic",
            "state": "Stable",
            "assignor": "range",
            "simple": False,
            "members": [{"client_id": f"{classic}-a", **member}],
        }
        assert described["consumer"] == {
            "group": consumer,
            "type": "Consumer",
            "state": "Stable",
            "assignor": "uniform",
            "simple": False,
            "members": [{"client_id": f"{consumer}-a", **member}],
        }
        assert described["share"] == {
            "group": share,
            "state": "Stable",
            "members": [{"client_id": f"{share}-a", **member}],
        }
        # a group described as the wrong type is not found, in Kafka's words
        not_found = "org.apache.kafka.common.errors.GroupIdNotFoundException"
        assert described["share_as_consumer"]["failure"] == {
            "type": not_found,
            "message": f"Group {share} is not a consumer group.",
        }
        for name, group in (("classic_as_share", classic), ("consumer_as_share", consumer)):
            assert described[name]["failure"] == {
                "type": not_found,
                "message": f"Group {group} is not a share group.",
            }
        assert ev["left"]["default"] == [{**x, "state": "Empty"} for x in live]
        return ev

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]
