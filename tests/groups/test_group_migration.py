"""A group moving between the classic and the consumer protocol with Java consumers
(group.consumer.migration.policy, bidirectional by default): a rolling upgrade from
group.protocol=classic to consumer, one member at a time, while the group keeps every
partition owned exactly once; and back."""

from __future__ import annotations

import pytest
from helpers.broker import Broker, BrokerFactory
from helpers.topics import create_topic
from helpers.wire import WireClient

from groups.members import (
    CONSUMER_PROTOCOL,
    COOPERATIVE,
    JavaMember,
    Members,
    all_partitions,
    wait_settled,
    wait_until,
)

LIST_GROUPS = 16
SETTINGS = {"group.consumer.heartbeat.interval.ms": 200, "group.consumer.session.timeout.ms": 6000}


def settle(members: list[JavaMember], partitions: set[str]) -> dict[str, set[str]]:
    def balanced(got: dict[str, set[str]]) -> bool:
        sizes = [len(p) for p in got.values()]
        return max(sizes) - min(sizes) <= 1

    return wait_settled(members, partitions, timeout=45, extra=balanced, same_generation=False)


def group_type(broker: Broker, group: str) -> str:
    with WireClient(broker.bootstrap) as client:
        listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    return str(next(g.group_type for g in listed.groups if g.group_id == group))


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> Broker:
    return broker_factory(SETTINGS)


@pytest.mark.parametrize("assignor", ["range", "cooperative"])
def test_rolling_upgrade_and_downgrade_of_java_members(
    broker: Broker, unique_topic: str, unique_group: str, assignor: str
) -> None:
    create_topic(broker.bootstrap, unique_topic, 6)
    partitions = all_partitions({unique_topic: 6})
    classic_props = {"partition.assignment.strategy": COOPERATIVE} if assignor != "range" else {}
    with Members(broker.bootstrap, unique_group) as members:
        old = [members.start(f"old{i}", [unique_topic], classic_props) for i in range(2)]
        settle(old, partitions)
        assert group_type(broker, unique_group) == "classic"
        # the first consumer-protocol member turns the group into a consumer group
        new0 = members.start("new0", [unique_topic], CONSUMER_PROTOCOL)
        split = settle([*old, new0], partitions)
        assert sorted(len(p) for p in split.values()) == [2, 2, 2]
        assert group_type(broker, unique_group) == "consumer"
        # one classic member at a time makes way for a consumer-protocol one
        old[0].close()
        new1 = members.start("new1", [unique_topic], CONSUMER_PROTOCOL)
        settle([old[1], new0, new1], partitions)
        # and back: with only classic members left, the group is classic again
        new0.close()
        new1.close()
        alone = settle([old[1]], partitions)
        assert alone["old1"] == partitions
        assert group_type(broker, unique_group) == "classic"
        again = members.start("old2", [unique_topic], classic_props)
        settle([old[1], again], partitions)
        assert group_type(broker, unique_group) == "classic"


def test_upgrade_can_be_switched_off(broker_factory: BrokerFactory, unique_topic: str,
                                     unique_group: str) -> None:  # fmt: skip
    broker = broker_factory({**SETTINGS, "group.consumer.migration.policy": "disabled"})
    create_topic(broker.bootstrap, unique_topic, 2)
    partitions = all_partitions({unique_topic: 2})
    with Members(broker.bootstrap, unique_group) as members:
        old = members.start("old", [unique_topic])
        settle([old], partitions)
        new = members.start("new", [unique_topic], CONSUMER_PROTOCOL)
        failure = wait_until(new.errors, 30, "the consumer-protocol member's error")
        assert "GroupIdNotFound" in str(failure), failure
        assert group_type(broker, unique_group) == "classic"
        assert old.assignment() == partitions
