"""Committed offsets go away with their topic, and expire once their group is empty."""

from __future__ import annotations

import dataclasses
import time

from helpers.wire import WireClient

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.group_configs import shard_config
from odradek.coordinator.group import records as rec
from odradek.coordinator.group.classic import ClassicGroup, Member
from odradek.coordinator.group.offsets import OFFSET_COMMIT
from odradek.coordinator.group.record_codecs import OffsetKey
from odradek.coordinator.group.record_types import REGISTRY
from odradek.coordinator.group.shard import GroupShard

from .wiregroup import NONE, commit, fetch


def test_deleting_a_topic_deletes_its_committed_offsets(shared_broker, unique_topic, unique_group):
    other = unique_topic + "-kept"
    with WireClient(shared_broker.bootstrap) as c:
        for name in (unique_topic, other):
            c.create_topic(name)
        assert commit(c, unique_group, {(unique_topic, 0): 5, (other, 0): 7}) == {
            (unique_topic, 0): NONE,
            (other, 0): NONE,
        }
        deleted = c.call(
            20, 6, {"topics": [{"name": unique_topic, "topic_id": None}], "timeout": 5000}
        )
        assert deleted.responses[0].error_code == 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            offsets = fetch(c, unique_group, None)
            if (unique_topic, 0) not in offsets:
                break
            time.sleep(0.1)
        assert (unique_topic, 0) not in offsets
        assert offsets[(other, 0)][0] == 7


def _shard(retention_ms: int) -> GroupShard:
    config = dataclasses.replace(shard_config(BrokerConfig()), offsets_retention_ms=retention_ms)
    return GroupShard(None, config)


def _commit_record(shard: GroupShard, offset: int, group: str, topic: str, commit_ms: int) -> None:
    key, value = OFFSET_COMMIT.record(
        OffsetKey(group, topic, 0), rec.OffsetValue(offset, -1, "", commit_ms)
    )
    assert key is not None
    shard.replay(offset, key, value, -1)


def test_offsets_of_an_empty_group_expire_after_retention() -> None:
    shard = _shard(retention_ms=60_000)
    _commit_record(shard, 1, "idle", "t", commit_ms=1_000)
    _commit_record(shard, 2, "recent", "t", commit_ms=50_000)
    records = shard.expired_offset_records(now=61_001)
    keys = {REGISTRY.decode(k, v)[1] for k, v in records if v is None}  # type: ignore[index]
    assert OffsetKey("idle", "t", 0) in keys
    assert OffsetKey("recent", "t", 0) not in keys
    for key, value in records:
        shard.replay(0, key, value, -1)
    assert "idle" not in shard.offsets and "recent" in shard.offsets


def test_offsets_of_a_group_with_members_do_not_expire() -> None:
    shard = _shard(retention_ms=1)
    _commit_record(shard, 1, "busy", "t", commit_ms=0)
    assert shard.expired_offset_records(now=10_000), "while the group is empty they would expire"
    group = ClassicGroup("busy")
    group.add(Member("m-1", None, "c", "/127.0.0.1", 6000, 6000, "consumer", []))
    shard.groups["busy"] = group
    assert shard.expired_offset_records(now=10_000) == []
