"""The consumer group protocol on one shard as a pure state machine: every heartbeat's
records are replayed as the runtime would, and a second shard that replays them all
from the start ends in the same state (what a restart does)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.group_configs import shard_config
from odradek.coordinator.group.classic import ClassicGroup, Member
from odradek.coordinator.group.consumer import UNREVOKED_PARTITIONS
from odradek.coordinator.group.context import now_ms
from odradek.coordinator.group.record_codecs import OffsetKey
from odradek.coordinator.group.record_types import REGISTRY
from odradek.coordinator.group.shard import GroupShard
from odradek.coordinator.runtime import Record
from odradek.protocol.errors import ErrorCode

T = uuid.UUID(int=5)
TOPICS = {"orders": (T, 4)}


class Harness:
    def __init__(self, max_size: int = 10) -> None:
        self.shard = GroupShard(
            None, shard_config(BrokerConfig(group_consumer_max_size=max_size)), lambda: TOPICS
        )
        self.log: list[Record] = []

    def apply(self, records: list[Record]) -> None:
        for key, value in records:
            assert key is not None
            self.shard.replay(len(self.log), key, value, -1)
            self.log.append((key, value))

    def beat(self, **request: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "group_id": "g",
            "member_id": "",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": -1,
            "subscribed_topic_names": None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "owned": None,
            "client_id": "client",
            "client_host": "/127.0.0.1",
        }
        base.update(request)
        result = self.shard.consumer_group_heartbeat(base)
        self.apply(result.records)
        assert result.response is not None
        return result.response

    def join(self, member_id: str, **request: Any) -> dict[str, Any]:
        return self.beat(
            member_id=member_id,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=("orders",),
            owned={},
            **request,
        )

    def replayed(self) -> GroupShard:
        fresh = GroupShard(None, shard_config(BrokerConfig()), lambda: TOPICS)
        for offset, (key, value) in enumerate(self.log):
            assert key is not None
            fresh.replay(offset, key, value, -1)
        return fresh


def parts(*numbers: int) -> dict[uuid.UUID, frozenset[int]]:
    return {T: frozenset(numbers)}


def test_join_revoke_assign_and_the_same_state_after_a_replay() -> None:
    h = Harness()
    first = h.join("a")
    assert (first["member_epoch"], first["assignment"]) == (1, parts(0, 1, 2, 3))
    second = h.join("b")
    assert (second["member_epoch"], second["assignment"]) == (2, {})  # 2 and 3 still a's
    revoke = h.beat(member_id="a", member_epoch=1, owned=parts(0, 1, 2, 3))
    assert (revoke["member_epoch"], revoke["assignment"]) == (1, parts(0, 1))
    done = h.beat(member_id="a", member_epoch=1, owned=parts(0, 1))
    assert done["member_epoch"] == 2
    taken = h.beat(member_id="b", member_epoch=2)
    assert taken["assignment"] == parts(2, 3)
    live, replayed = h.shard.consumer_groups["g"], h.replayed().consumer_groups["g"]
    assert replayed == live
    assert live.state == "Stable"


def test_epochs_that_fence_and_the_previous_epoch_that_does_not() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat(member_id="a", member_epoch=1, owned=parts(0, 1, 2, 3))
    h.beat(member_id="a", member_epoch=1, owned=parts(0, 1))  # a is at epoch 2 now
    # a lost response: epoch 1 again, owning a subset of its assignment: accepted
    assert h.beat(member_id="a", member_epoch=1, owned=parts(0))["error_code"] == 0
    for epoch in (5, 1):  # ahead of the broker; behind it owning what is not its own
        code = h.beat(member_id="a", member_epoch=epoch, owned=parts(0, 3))["error_code"]
        assert code == ErrorCode.fenced_member_epoch
    assert h.beat(member_id="nobody", member_epoch=3)["error_code"] == ErrorCode.unknown_member_id


@pytest.mark.parametrize(
    ("request_fields", "code"),
    [
        ({"member_epoch": 0, "rebalance_timeout_ms": -1}, ErrorCode.invalid_request),
        ({"member_epoch": 0, "owned": parts(1)}, ErrorCode.invalid_request),
        ({"member_epoch": 0, "subscribed_topic_names": ()}, ErrorCode.invalid_request),
        ({"member_epoch": -3}, ErrorCode.invalid_request),
        ({"member_epoch": 2, "member_id": ""}, ErrorCode.invalid_request),
        ({"member_epoch": 0, "server_assignor": "fancy"}, ErrorCode.unsupported_assignor),
        ({"member_epoch": 0, "group_id": ""}, ErrorCode.invalid_request),
    ],
)
def test_invalid_requests(request_fields: dict[str, Any], code: ErrorCode) -> None:
    request = {
        "member_id": "m",
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ("orders",),
        "owned": {},
    }
    request.update(request_fields)
    assert Harness().beat(**request)["error_code"] == code


def test_group_max_size() -> None:
    h = Harness(max_size=1)
    h.join("a")
    assert h.join("b")["error_code"] == ErrorCode.group_max_size_reached


def test_static_member_leaves_for_a_while_and_comes_back_as_a_new_member_id() -> None:
    h = Harness()
    h.join("a", instance_id="i-a")
    assert h.join("b", instance_id="i-a")["error_code"] == ErrorCode.unreleased_instance_id
    assert h.beat(member_id="a", member_epoch=-2, instance_id="i-a")["member_epoch"] == -2
    back = h.join("a2", instance_id="i-a")
    assert back["error_code"] == 0
    assert back["assignment"] == parts(0, 1, 2, 3)
    assert set(h.shard.consumer_groups["g"].members) == {"a2"}


def test_leaving_moves_partitions_to_the_others() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat(member_id="a", member_epoch=1, owned=parts(0, 1, 2, 3))
    h.beat(member_id="a", member_epoch=1, owned=parts(0, 1))
    h.beat(member_id="b", member_epoch=2)
    assert h.beat(member_id="a", member_epoch=-1)["member_epoch"] == -1
    assert h.beat(member_id="b", member_epoch=2, owned=parts(2, 3))["assignment"] == parts(
        0, 1, 2, 3
    )


def test_a_member_that_does_not_revoke_in_time_is_fenced() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat(member_id="a", member_epoch=1, owned=parts(0, 1, 2, 3))
    assert h.shard.consumer_groups["g"].members["a"].state == UNREVOKED_PARTITIONS
    h.apply(h.shard._fence("g", "a", 1, "did not revoke in time").records)
    assert "a" not in h.shard.consumer_groups["g"].members
    assert h.beat(member_id="a", member_epoch=1)["error_code"] == ErrorCode.unknown_member_id
    assert h.beat(member_id="b", member_epoch=2)["assignment"] == parts(0, 1, 2, 3)


def test_offset_commits_check_the_member_epoch() -> None:
    h = Harness()
    h.join("a")

    def commit(member_id: str, epoch: int, producer: Any = None) -> int:
        request = {
            "group_id": "g",
            "generation": epoch,
            "member_id": member_id,
            "group_instance_id": None,
            "producer": producer,
            "offsets": {("orders", 0): (5, -1, "")},
        }
        result = h.shard.commit_offsets(request)
        h.apply(result.records)
        assert result.response is not None
        return int(result.response[("orders", 0)])

    assert commit("a", 1) == 0
    assert commit("a", 0) == ErrorCode.stale_member_epoch
    assert commit("a", 0, producer=(1, 0)) == ErrorCode.illegal_generation
    assert commit("x", 1) == ErrorCode.unknown_member_id
    assert commit("", -1) == ErrorCode.unknown_member_id  # the group has members


def test_a_classic_group_of_another_protocol_type_is_not_taken_over() -> None:
    h = Harness()
    classic = ClassicGroup("g")
    classic.add(Member("m", None, "c", "/h", 1000, 1000, "connect", [("default", b"")]))
    h.shard.groups["g"] = classic
    assert h.join("a")["error_code"] == ErrorCode.group_id_not_found


def test_offsets_of_subscribed_topics_cannot_be_deleted_and_an_empty_group_can_go() -> None:
    h = Harness()
    h.join("a")
    result = h.shard.delete_offsets("g", [("orders", 0), ("elsewhere", 0)])
    assert result.response is not None
    code, answers = result.response
    assert code == 0
    assert answers == {
        ("orders", 0): ErrorCode.group_subscribed_to_topic,
        ("elsewhere", 0): ErrorCode.none,
    }
    assert h.shard.delete_groups(["g"]).response == {"g": ErrorCode.non_empty_group}
    h.beat(member_id="a", member_epoch=-1)
    deleted = h.shard.delete_groups(["g"])
    assert deleted.response == {"g": ErrorCode.none}
    h.apply(deleted.records)
    assert "g" not in h.shard.consumer_groups
    assert "g" not in h.replayed().consumer_groups


def test_a_topic_created_after_the_subscription_joins_the_assignment() -> None:
    """Heartbeats that change no subscription reuse the names found at the group epoch;
    a subscribed topic that appears (or grows) still moves the group to a new epoch."""
    later = uuid.UUID(int=6)
    h = Harness()
    topics: dict[str, tuple[uuid.UUID, int]] = {"orders": (T, 4)}
    h.shard.topics_view = lambda: topics
    first = h.beat(
        member_id="a",
        rebalance_timeout_ms=30000,
        subscribed_topic_names=("orders", "later"),
        owned={},
    )
    epoch = first["member_epoch"]
    assert first["assignment"] == parts(0, 1, 2, 3)
    steady = h.beat(member_id="a", member_epoch=epoch, owned=first["assignment"])
    assert steady["member_epoch"] == epoch  # nothing changed
    topics["later"] = (later, 2)
    grown = h.beat(member_id="a", member_epoch=epoch, owned=first["assignment"])
    assert grown["member_epoch"] > epoch
    assert grown["assignment"] == {T: frozenset({0, 1, 2, 3}), later: frozenset({0, 1})}
    topics["later"] = (later, 3)
    more = h.beat(member_id="a", member_epoch=grown["member_epoch"], owned=grown["assignment"])
    assert more["assignment"][later] == frozenset({0, 1, 2})


def test_members_keep_the_offsets_of_the_topics_they_read_from_expiring() -> None:
    """As Kafka: while a consumer group has members, the offsets of the topics they
    subscribe to do not expire; those of other topics do, retention after their commit."""
    h = Harness()
    h.join("a")
    committed = h.shard.commit_offsets(
        {
            "group_id": "g",
            "generation": 1,
            "member_id": "a",
            "group_instance_id": None,
            "producer": None,
            "offsets": {("orders", 0): (5, -1, ""), ("elsewhere", 0): (7, -1, "")},
        }
    )
    h.apply(committed.records)
    later = now_ms() + h.shard.context.config.offsets_retention_ms + 1
    records = h.shard.expired_offset_records(later)
    assert [_decoded_key(key, value) for key, value in records] == [OffsetKey("g", "elsewhere", 0)]
    h.apply(records)
    h.beat(member_id="a", member_epoch=-1)
    records = h.shard.expired_offset_records(later)
    assert [_decoded_key(key, value) for key, value in records] == [OffsetKey("g", "orders", 0)]


def _decoded_key(key: bytes | None, value: bytes | None) -> Any:
    assert key is not None
    decoded = REGISTRY.decode(key, value)
    assert decoded is not None
    return decoded[1]
