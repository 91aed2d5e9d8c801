"""Share groups (ShareGroupHeartbeat) on one shard as a pure state machine: heartbeats'
records replayed as the runtime would. A member that heartbeats on with nothing changed
keeps its epoch; new partitions of its topic move the group to a new epoch."""

from __future__ import annotations

import uuid
from typing import Any

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.group_configs import shard_config
from odradek.coordinator.group.shard import GroupShard
from odradek.coordinator.runtime import Record

T = uuid.UUID(int=7)


class Harness:
    def __init__(self) -> None:
        self.topics = {"orders": (T, 2)}
        self.shard = GroupShard(None, shard_config(BrokerConfig()), lambda: self.topics)
        self.log: list[Record] = []

    def beat(self, member_id: str, epoch: int, topics: tuple[str, ...] | None) -> dict[str, Any]:
        request = {
            "group_id": "g",
            "member_id": member_id,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": topics,
            "client_id": "client",
            "client_host": "/127.0.0.1",
        }
        result = self.shard.share_group_heartbeat(request)
        for key, value in result.records:
            assert key is not None
            self.shard.replay(len(self.log), key, value, -1)
            self.log.append((key, value))
        assert result.response is not None
        return result.response

    def replayed(self) -> GroupShard:
        fresh = GroupShard(None, shard_config(BrokerConfig()), lambda: self.topics)
        for offset, (key, value) in enumerate(self.log):
            assert key is not None
            fresh.replay(offset, key, value, -1)
        return fresh


def test_heartbeats_keep_the_epoch_until_the_topics_change() -> None:
    h = Harness()
    joined = h.beat("m", 0, ("orders",))
    assert joined["member_epoch"] == 1
    assert joined["assignment"] == {T: frozenset({0, 1})}
    written = len(h.log)
    for _ in range(3):
        again = h.beat("m", 1, None)
        assert (again["error_code"], again["member_epoch"]) == (0, 1)
    assert len(h.log) == written  # nothing to write while nothing changes

    h.topics = {"orders": (T, 3)}
    grown = h.beat("m", 1, None)
    assert grown["member_epoch"] == 2
    assert grown["assignment"] == {T: frozenset({0, 1, 2})}
    assert h.beat("m", 2, None)["member_epoch"] == 2

    for shard in (h.shard, h.replayed()):
        described = shard.describe_share_group("g").response
        assert isinstance(described, dict)
        assert (described["group_epoch"], described["assignment_epoch"]) == (2, 2)
        assert described["topic_names"][T] == "orders"
    assert h.replayed().share_groups["g"].metadata_hash == h.shard.share_groups["g"].metadata_hash
