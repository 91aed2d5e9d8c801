"""A group moving between the classic and the consumer protocol on one shard, and
classic members inside a consumer group, as pure state: every result's records are
replayed as the runtime would, and a shard that replays the whole log agrees."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.group_configs import shard_config
from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group.classic import PREPARING_REBALANCE, ClassicGroup, Member
from odradek.coordinator.group.shard import GroupShard
from odradek.coordinator.runtime import Record
from odradek.protocol import embedded_consumer as embedded
from odradek.protocol.codec import RecordFormatError
from odradek.protocol.errors import ErrorCode

T = uuid.UUID(int=7)
TOPICS = {"orders": (T, 4)}


def subscription(version: int = 1, owned: dict[str, list[int]] | None = None) -> bytes:
    """A ConsumerProtocolSubscription as the Java client writes it."""
    out = version.to_bytes(2, "big") + (1).to_bytes(4, "big")
    out += len(b"orders").to_bytes(2, "big") + b"orders"
    out += (-1).to_bytes(4, "big", signed=True)  # no user data
    if version >= 1:
        owned = owned or {}
        out += len(owned).to_bytes(4, "big")
        for topic, partitions in owned.items():
            out += len(topic).to_bytes(2, "big") + topic.encode()
            out += len(partitions).to_bytes(4, "big")
            out += b"".join(p.to_bytes(4, "big") for p in partitions)
    if version >= 2:
        out += (-1).to_bytes(4, "big", signed=True)
    if version >= 3:
        out += (-1).to_bytes(2, "big", signed=True)
    return out


class Harness:
    def __init__(self, policy: str = "bidirectional") -> None:
        self.config = shard_config(BrokerConfig(group_consumer_migration_policy=policy))
        self.shard = GroupShard(None, self.config, lambda: TOPICS)
        self.log: list[Record] = []

    def apply(self, records: list[Record]) -> None:
        for key, value in records:
            assert key is not None
            self.shard.replay(len(self.log), key, value, -1)
            self.log.append((key, value))

    def classic_group(self, *members: str, generation: int = 3) -> None:
        """A stable classic group whose members hold two partitions each."""
        group = ClassicGroup("g", state="Stable", generation=generation, protocol="range")
        for index, member_id in enumerate(members):
            member = Member(member_id, None, "c", "/h", 30000, 10000, "consumer",
                            [("range", subscription())])  # fmt: skip
            owned = {"orders": frozenset({2 * index, 2 * index + 1})}
            member.assignment = embedded.encode_assignment(0, owned)
            group.add(member)
        self.apply([self.shard._group_record(group)])

    def beat(self, member_id: str, epoch: int, **request: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "group_id": "g",
            "member_id": member_id,
            "member_epoch": epoch,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
            "subscribed_topic_names": ("orders",) if epoch == 0 else None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "owned": {} if epoch == 0 else None,
            "client_id": "client",
            "client_host": "/127.0.0.1",
        }
        base.update(request)
        result = self.shard.consumer_group_heartbeat(base)
        self.apply(result.records)
        assert result.response is not None
        return result.response

    async def join(self, member_id: str, metadata: bytes | None = None) -> dict[str, Any]:
        request = {
            "group_id": "g",
            "member_id": member_id,
            "group_instance_id": None,
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 30000,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": metadata or subscription()}],
            "client_id": "c",
            "client_host": "/h",
            "require_known_member_id": True,
        }
        result = self.shard.join_group(request)
        self.apply(result.records)
        answer: dict[str, Any] = await result.response
        return answer

    async def sync(self, member_id: str, generation: int) -> dict[str, Any]:
        request = {
            "group_id": "g",
            "member_id": member_id,
            "group_instance_id": None,
            "generation_id": generation,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        }
        result = self.shard.sync_group(request)
        answer: dict[str, Any] = await result.response
        return answer

    def heartbeat(self, member_id: str, generation: int) -> int:
        result = self.shard.heartbeat("g", member_id, None, generation)
        assert result.response is not None
        return result.response

    def replayed(self) -> GroupShard:
        fresh = GroupShard(None, shard_config(BrokerConfig()), lambda: TOPICS)
        for offset, (key, value) in enumerate(self.log):
            assert key is not None
            fresh.replay(offset, key, value, -1)
        return fresh


LEAVE = {"group_id": "g", "member_epoch": -1, "instance_id": None, "rack_id": None}


def parts(*numbers: int) -> dict[uuid.UUID, frozenset[int]]:
    return {T: frozenset(numbers)}


async def test_upgrade_keeps_members_and_partitions_until_they_rejoin() -> None:
    h = Harness()
    h.classic_group("m1", "m2")
    joined = h.beat("new", 0)
    assert joined["error_code"] == ErrorCode.none
    assert "g" not in h.shard.groups
    group = h.shard.consumer_groups["g"]
    assert group.members["m1"].assigned == parts(0, 1)
    assert group.members["m1"].classic is not None
    assert group.members["new"].member_epoch == 4  # the generation 3, bumped
    assert joined["assignment"] == {}  # everything still held by the classic members
    # the classic members hear of the new epoch through their heartbeats
    assert h.heartbeat("m1", 3) == ErrorCode.rebalance_in_progress
    assert h.heartbeat("m1", 2) == ErrorCode.illegal_generation
    # an eager member rejoins owning nothing: it gets what of its target is free
    rejoined = await h.join("m1")
    assert rejoined["generation_id"] == 4
    synced = await h.sync("m1", 4)
    assert as_ids(synced["assignment"]) == h.shard.consumer_groups["g"].members["m1"].assigned
    assert h.heartbeat("m1", 4) in (ErrorCode.none, ErrorCode.rebalance_in_progress)
    for _ in range(3):
        for member_id in ("m1", "m2"):
            answer = await h.join(member_id)
            await h.sync(member_id, answer["generation_id"])
        h.beat("new", h.shard.consumer_groups["g"].members["new"].member_epoch)
        assert_no_partition_has_two_owners(h)
    group = h.shard.consumer_groups["g"]
    assert group.state == "Stable"
    held = sorted(p for m in group.members.values() for p in m.assigned.get(T, ()))
    assert held == [0, 1, 2, 3]
    assert all(m.assigned for m in group.members.values())
    assert h.replayed().consumer_groups["g"] == group


def as_ids(assignment: bytes) -> dict[uuid.UUID, frozenset[int]]:
    return {TOPICS[name][0]: p for name, p in embedded.decode_assignment(assignment).items() if p}


def assert_no_partition_has_two_owners(h: Harness) -> None:
    seen: set[int] = set()
    for member in h.shard.consumer_groups["g"].members.values():
        held = member.assigned.get(T, frozenset()) | member.pending_revocation.get(T, frozenset())
        assert not held & seen
        seen |= held


async def test_a_cooperative_member_keeps_its_partitions_until_it_gives_them_up() -> None:
    h = Harness()
    h.classic_group("m1", "m2")
    h.beat("new", 0)
    group = h.shard.consumer_groups["g"]
    giver = next(m for m in ("m1", "m2") if group.target[m] != group.members[m].assigned)
    held = sorted(group.members[giver].assigned[T])
    rejoined = await h.join(giver, subscription(owned={"orders": held}))
    assert rejoined["generation_id"] == 3  # still revoking, at its old epoch
    synced = await h.sync(giver, 3)
    kept = as_ids(synced["assignment"])
    member = h.shard.consumer_groups["g"].members[giver]
    assert kept == member.assigned and member.pending_revocation
    assert h.heartbeat(giver, 3) == ErrorCode.rebalance_in_progress
    rejoined = await h.join(giver, subscription(owned={"orders": sorted(kept[T])}))
    assert rejoined["generation_id"] == 4
    assert not h.shard.consumer_groups["g"].members[giver].pending_revocation


async def test_classic_join_to_a_consumer_group_and_its_errors() -> None:
    h = Harness()
    h.beat("a", 0)
    first = await h.join("")
    assert first["error_code"] == ErrorCode.member_id_required
    member_id = first["member_id"]
    joined = await h.join(member_id)
    assert joined["error_code"] == ErrorCode.none
    assert joined["generation_id"] == 2
    assert joined["leader"] == "" and joined["members"] == []
    assert (await h.sync(member_id, 1))["error_code"] == ErrorCode.illegal_generation
    assert (await h.sync("nobody", 2))["error_code"] == ErrorCode.unknown_member_id
    # a consumer-protocol member is not a classic one
    assert h.heartbeat("a", 1) == ErrorCode.unknown_member_id
    request_protocols = {"name": "roundrobin", "metadata": subscription()}
    result = h.shard.join_group(
        {
            "group_id": "g",
            "member_id": "other",
            "group_instance_id": None,
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 30000,
            "protocol_type": "consumer",
            "protocols": [request_protocols],
            "client_id": "c",
            "client_host": "/h",
            "require_known_member_id": True,
        }
    )
    answer = await result.response
    assert answer["error_code"] == ErrorCode.inconsistent_group_protocol


async def test_the_last_consumer_member_leaving_turns_the_group_classic() -> None:
    h = Harness()
    h.classic_group("m1", "m2")
    h.beat("new", 0)
    leave = {**LEAVE, "member_id": "new"}
    result = h.shard.consumer_group_heartbeat(leave)
    classic = h.shard.groups["g"]
    assert classic.state == PREPARING_REBALANCE  # its members learn it from heartbeats
    h.apply(result.records)
    assert "g" not in h.shard.consumer_groups
    assert set(classic.members) == {"m1", "m2"}
    assert classic.generation == 4
    held = embedded.decode_assignment(classic.members["m1"].assignment)
    assert held == {"orders": frozenset({0, 1})}
    replayed = h.replayed()
    assert "g" not in replayed.consumer_groups
    assert set(replayed.groups["g"].members) == {"m1", "m2"}


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_the_policy_can_refuse_the_upgrade(policy: str) -> None:
    h = Harness(policy)
    h.classic_group("m1")
    assert h.beat("new", 0)["error_code"] == ErrorCode.group_id_not_found
    assert "g" in h.shard.groups


async def test_without_downgrade_the_group_stays_a_consumer_group() -> None:
    h = Harness("upgrade")
    h.classic_group("m1")
    h.beat("new", 0)
    h.beat("new", -1)
    assert set(h.shard.consumer_groups["g"].members) == {"m1"}


def test_a_malformed_subscription_is_not_upgraded() -> None:
    h = Harness()
    group = ClassicGroup("g", state="Stable", generation=1, protocol="range")
    group.add(Member("m", None, "c", "/h", 1000, 1000, "consumer", [("range", b"\x00")]))
    h.apply([h.shard._group_record(group)])
    assert h.beat("new", 0)["error_code"] == ErrorCode.group_id_not_found


def test_offset_fetch_checks_the_member_of_a_consumer_group() -> None:
    h = Harness()
    h.beat("a", 0)

    def fetch(member: tuple[str | None, int]) -> int:
        result = h.shard.fetch_offsets("g", None, False, member)
        assert result.response is not None
        return int(result.response["error_code"])

    assert fetch((None, -1)) == ErrorCode.none
    assert fetch(("a", 1)) == ErrorCode.none
    assert fetch(("a", 0)) == ErrorCode.stale_member_epoch
    assert fetch(("x", 1)) == ErrorCode.unknown_member_id


def test_member_metadata_with_classic_metadata_round_trips() -> None:
    value = cr.MemberMetadata(
        "i", None, "c", "/h", ("orders",), None, 30000, None,
        cr.ClassicMetadata(10000, (("range", b"\x00\x01"), ("cooperative-sticky", b""))),
    )  # fmt: skip
    assert cr.MEMBER_VALUE.decode(cr.MEMBER_VALUE.encode(value)) == value
    plain = cr.MemberMetadata("i", None, "c", "/h", ("orders",), None, 30000, "uniform")
    assert cr.MEMBER_VALUE.decode(cr.MEMBER_VALUE.encode(plain)) == plain


def test_embedded_protocol_round_trips_and_rejects_garbage() -> None:
    for version in range(4):
        decoded = embedded.decode_subscription(subscription(version, {"orders": [1, 2]}))
        assert decoded.topics == ("orders",)
        assert decoded.owned == ({"orders": frozenset({1, 2})} if version else {})
    owned = {"a": frozenset({0, 5}), "b": frozenset()}
    assert embedded.decode_assignment(embedded.encode_assignment(3, owned)) == owned
    rng = random.Random(7)
    valid = subscription(3, {"orders": [1, 2]})
    for _ in range(2000):
        garbage = bytearray(valid[: rng.randrange(len(valid) + 1)])
        if garbage and rng.random() < 0.5:
            garbage[rng.randrange(len(garbage))] = rng.randrange(256)
        try:
            embedded.decode_subscription(bytes(garbage))
            embedded.decode_assignment(bytes(garbage))
        except RecordFormatError:
            pass
    huge = (0).to_bytes(2, "big") + (2**31 - 1).to_bytes(4, "big")
    with pytest.raises(RecordFormatError):
        embedded.decode_subscription(huge)
