"""A group shard's load holds back runs of plain offset commits and applies only the last
of each key: the shard it loads is the one replaying every record gives, whatever the
mix of commits, removals, transactional commits and markers, and group records."""

from __future__ import annotations

import random
from typing import Any

import pytest

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.group_configs import shard_config
from odradek.coordinator.group import classic
from odradek.coordinator.group import records as rec
from odradek.coordinator.group.offsets import OFFSET_COMMIT
from odradek.coordinator.group.record_codecs import GroupKey, OffsetKey
from odradek.coordinator.group.shard import GroupShard

GROUPS = ("a", "b", "é")
Entry = tuple[str, Any]  # ("record", (key, value, producer id)) or ("marker", (pid, commit))


def _log(seed: int, length: int = 400) -> list[Entry]:
    rng = random.Random(seed)
    log: list[Entry] = []
    for _ in range(length):
        group = rng.choice(GROUPS)
        key = OffsetKey(group, rng.choice(("t", "u")), rng.randrange(3))
        draw = rng.random()
        if draw < 0.55:
            value = rec.OffsetValue(rng.randrange(1000), 0, "", 1700000000000)
            log.append(("record", (*OFFSET_COMMIT.record(key, value), -1)))
        elif draw < 0.7:
            log.append(("record", (*OFFSET_COMMIT.tombstone(key), -1)))
        elif draw < 0.8:
            value = rec.OffsetValue(rng.randrange(1000), 0, "txn", 1700000000000)
            log.append(("record", (*OFFSET_COMMIT.record(key, value), rng.randrange(2))))
        elif draw < 0.9:
            log.append(("marker", (rng.randrange(2), rng.random() < 0.7)))
        elif draw < 0.95:
            log.append(("record", (*classic.GROUP_METADATA.tombstone(GroupKey(group)), -1)))
        else:
            group_value = rec.GroupValue("consumer", 1, "range", None, 1700000000000)
            record = classic.GROUP_METADATA.record(GroupKey(group), group_value)
            log.append(("record", (*record, -1)))
    return log


def _load(log: list[Entry], held_back: bool) -> GroupShard:
    shard = GroupShard(None, shard_config(BrokerConfig()))
    if held_back:
        shard.begin_load()
    for offset, (kind, entry) in enumerate(log):
        if kind == "marker":
            shard.replay_control(*entry)
        else:
            key, value, producer_id = entry
            shard.replay(offset, key, value, producer_id)
    shard.on_loaded()
    return shard


def _state(shard: GroupShard) -> Any:
    groups = {g: (v.generation, v.protocol_type) for g, v in shard.groups.items()}
    return shard.offsets, shard.committed.pending, groups


@pytest.mark.parametrize("seed", range(40))
def test_a_load_gives_the_shard_replay_gives(seed: int) -> None:
    log = _log(seed)
    assert _state(_load(log, held_back=True)) == _state(_load(log, held_back=False))


def test_after_the_load_every_commit_applies_at_once() -> None:
    shard = _load(_log(1), held_back=True)
    key, value = OFFSET_COMMIT.record(
        OffsetKey("a", "t", 0), rec.OffsetValue(424242, 0, "", 1700000000000)
    )
    shard.replay(10_000, key, value, -1)
    assert shard.offsets["a"][("t", 0)].offset == 424242
