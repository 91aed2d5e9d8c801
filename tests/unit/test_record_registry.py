"""Every coordinator record type writes, through the record registry, the very bytes
earlier versions of Odradek wrote (records on disk from an older run must still
load), and reads them back."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.group_configs import shard_config
from odradek.coordinator.group import classic, consumer, offsets, share, streams
from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group import records as rec
from odradek.coordinator.group import share_records as shr
from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.record_codecs import GroupKey, MemberKey, OffsetKey
from odradek.coordinator.group.record_types import REGISTRY
from odradek.coordinator.group.shard import GroupShard
from odradek.coordinator.registry import Registry
from odradek.coordinator.txn import records as txn
from odradek.coordinator.txn import shard as txn_shard
from odradek.protocol.codec import RecordFormatError

T1 = uuid.UUID("12345678-1234-5678-1234-567812345678")
T2 = uuid.UUID(int=1)

# name -> (key, value) as hex, as the codecs before the registry wrote them
WRITTEN = {
    "offset commit": (
        "0001000367727000066f726465727300000007",
        "00030000001cbe991a140000000500046d6574610000018bcfe56800",
    ),
    "group metadata": (
        "0002000367c3a9",
        "00030008636f6e73756d657200000003000572616e676500026d310000018bcfe568010000000200"
        "026d31000269310002633100092f31302e302e302e31000493e00000afc800000005000173756200"
        "0000040002617300026d32ffff0002633200092f31302e302e302e320000ea600000271000000000"
        "00000000",
    ),
    "consumer epoch": (
        "0003000167",
        "00000000000500",
    ),
    "consumer topics": (
        "0004000167",
        "00000312345678123456781234567812345678076f72646572730000000601000000000000000000"
        "000000000000000103c3a900000001010000",
    ),
    "consumer member": (
        "000500016700016d",
        "00000269000263032f68030261026200000493e008756e69666f726d00",
    ),
    "consumer classic member": (
        "000500016700026d32",
        "00000002720263032f680104742e2a00007530000100260100002710030672616e67650300010013"
        "636f6f70657261746976652d737469636b79010000",
    ),
    "consumer target epoch": (
        "0006000167",
        "00000000000400",
    ),
    "consumer target member": (
        "000700016700016d",
        "00000300000000000000000000000000000001020000000100123456781234567812345678123456"
        "780300000000000000020000",
    ),
    "consumer current": (
        "000800016700016d",
        "00000000000700000006010212345678123456781234567812345678030000000000000001000200"
        "00000000000000000000000000000102000000030000",
    ),
    "share member": (
        "000a00017300016d",
        "000002720263032f68030261026200",
    ),
    "share epoch": (
        "000b000173",
        "000000000003fffffee08e04fb3500",
    ),
    "share target epoch": (
        "000c000173",
        "00000000000300",
    ),
    "share target member": (
        "000d00017300016d",
        "000002123456781234567812345678123456780300000000000000050000",
    ),
    "share current": (
        "000e00017300016d",
        "000000000003000000020002123456781234567812345678123456780300000000000000050000",
    ),
    "share state partitions": (
        "000f000173",
        "00000212345678123456781234567812345678076f72646572730300000000000000010002000000"
        "00000000000000000000000001026202000000020002123456781234567812345678123456780567"
        "6f6e650000",
    ),
    "streams metadata": (
        "00110003617070",
        "000000000004ffffffffffffff9d02000400000002011902156e756d2e7374616e6462792e726570"
        "6c69636173023100",
    ),
    "streams metadata plain": (
        "0011000461707032",
        "000000000001000000000000000001010101",
    ),
    "streams legacy": (
        "00120003617070",
        None,
    ),
    "streams member": (
        "0013000361707000016d",
        "0000026902720263032f68000493e000000002037031010b69712e6578616d706c659c400002057a"
        "6f6e65037a310000",
    ),
    "streams member plain": (
        "0013000361707000026d32",
        "000000000263032f68ffffffff00000001037032ff0100",
    ),
    "streams target epoch": (
        "00140003617070",
        "0000000000040100080000018bcfe56802",
    ),
    "streams target epoch plain": (
        "0014000461707032",
        "00000000000100",
    ),
    "streams target member": (
        "0015000361707000016d",
        "0000020230030000000000000001000202310200000002000100",
    ),
    "streams current": (
        "0016000361707000016d",
        "00000000000400000003020202300300000000000000010100090300000004000000030202310200"
        "0000020002023202000000000002023102000000050100050200000003010100",
    ),
    "streams topology": (
        "00170003617070",
        "00000000000203023002076f7264657273010102086170702d726570010100023102037431020474"
        "2e2a020e6170702d6368616e67656c6f67000000000000020f636c65616e75702e706f6c69637908"
        "636f6d7061637400000102086170702d72657000000004000301000202000001020000000000",
    ),
    "transaction": (
        "0000000474782d31",
        "0000000000000000002a00030000ea6001000000020001620000000000066f726465727300000002"
        "00000000000000020000018bcfe568030000018bcfe56800",
    ),
}

TOPOLOGY = sr.Topology(
    2,
    (
        sr.Subtopology("0", ("orders",), repartition_sink_topics=("app-rep",)),
        sr.Subtopology(
            "1",
            ("t1",),
            ("t.*",),
            (sr.TopicInfo("app-changelog", 0, 0, (("cleanup.policy", "compact"),)),),
            (),
            (sr.TopicInfo("app-rep", 4, 3),),
            (sr.CopartitionGroup((0,), (), (0,)),),
        ),
    ),
)


def cases() -> dict[str, tuple[Any, Any, Any]]:
    """name -> (record type, key, value) of the bytes in WRITTEN."""
    members = [
        rec.MemberValue(
            "m1", "i1", "c1", "/10.0.0.1", 300000, 45000, b"\x00\x01sub", b"\x00\x02as"
        ),
        rec.MemberValue("m2", None, "c2", "/10.0.0.2", 60000, 10000, b"", b""),
    ]
    classic_metadata = cr.ClassicMetadata(
        10000, (("range", b"\x00\x01"), ("cooperative-sticky", b""))
    )
    current = sr.CurrentAssignment(
        4,
        3,
        2,
        sr.AssignedTasks({"0": {0: 4, 1: 3}}, {"1": frozenset({2})}, {"2": frozenset({0})}),
        sr.AssignedTasks({"1": {5: 3}}),
    )
    state_partitions = shr.StatePartitions(
        (shr.TopicPartitionsNamed(T1, "orders", frozenset({1, 0})),),
        (shr.TopicPartitionsNamed(T2, "b", frozenset({2})),),
        ((T1, "gone"),),
    )
    g, m, m2 = GroupKey("g"), MemberKey("g", "m"), MemberKey("g", "m2")
    s, sm = GroupKey("s"), MemberKey("s", "m")
    app, app2 = GroupKey("app"), GroupKey("app2")
    app_m, app_m2 = MemberKey("app", "m"), MemberKey("app", "m2")
    return {
        "offset commit": (
            offsets.OFFSET_COMMIT,
            OffsetKey("grp", "orders", 7),
            rec.OffsetValue(123456789012, 5, "meta", 1700000000000),
        ),
        "group metadata": (
            classic.GROUP_METADATA,
            GroupKey("gé"),
            rec.GroupValue("consumer", 3, "range", "m1", 1700000000001, members),
        ),
        "consumer epoch": (consumer.GROUP_EPOCH, g, 5),
        "consumer topics": (
            consumer.PARTITION_METADATA,
            g,
            [cr.TopicMetadata(T1, "orders", 6), cr.TopicMetadata(T2, "é", 1)],
        ),
        "consumer member": (
            consumer.MEMBER_METADATA,
            m,
            cr.MemberMetadata("i", None, "c", "/h", ("a", "b"), None, 300000, "uniform"),
        ),
        "consumer classic member": (
            consumer.MEMBER_METADATA,
            m2,
            cr.MemberMetadata(None, "r", "c", "/h", (), "t.*", 30000, None, classic_metadata),
        ),
        "consumer target epoch": (consumer.TARGET_EPOCH, g, 4),
        "consumer target member": (
            consumer.TARGET_MEMBER,
            m,
            {T1: frozenset({2, 0}), T2: frozenset({1})},
        ),
        "consumer current": (
            consumer.CURRENT_ASSIGNMENT,
            m,
            cr.CurrentAssignment(7, 6, 1, {T1: frozenset({0, 1})}, {T2: frozenset({3})}),
        ),
        "share member": (share.MEMBER_METADATA, sm, shr.MemberMetadata("r", "c", "/h", ("a", "b"))),
        "share epoch": (share.GROUP_EPOCH, s, shr.GroupEpoch(3, -1234567890123)),
        "share target epoch": (share.TARGET_EPOCH, s, 3),
        "share target member": (share.TARGET_MEMBER, sm, {T1: frozenset({0, 5})}),
        "share current": (
            share.CURRENT_ASSIGNMENT,
            sm,
            shr.CurrentAssignment(3, 2, 0, {T1: frozenset({0, 5})}),
        ),
        "share state partitions": (share.STATE_PARTITIONS, s, state_partitions),
        "streams metadata": (
            streams.GROUP_METADATA,
            app,
            sr.GroupMetadata(4, -99, 2, (("num.standby.replicas", "1"),)),
        ),
        "streams metadata plain": (streams.GROUP_METADATA, app2, sr.GroupMetadata(1, 0)),
        "streams legacy": (streams.LEGACY_PARTITION_METADATA, app, None),
        "streams member": (
            streams.MEMBER_METADATA,
            app_m,
            sr.MemberMetadata(
                "i", "r", "c", "/h", 300000, 2, "p1", ("iq.example", 40000), (("zone", "z1"),)
            ),
        ),
        "streams member plain": (
            streams.MEMBER_METADATA,
            app_m2,
            sr.MemberMetadata(None, None, "c", "/h", -1, 1, "p2", None, ()),
        ),
        "streams target epoch": (streams.TARGET_EPOCH, app, sr.TargetEpoch(4, 1700000000002)),
        "streams target epoch plain": (streams.TARGET_EPOCH, app2, sr.TargetEpoch(1, 0)),
        "streams target member": (
            streams.TARGET_MEMBER,
            app_m,
            sr.TargetTasks({"0": frozenset({1, 0})}, {"1": frozenset({2})}, {}),
        ),
        "streams current": (streams.CURRENT_ASSIGNMENT, app_m, current),
        "streams topology": (streams.TOPOLOGY, app, TOPOLOGY),
        "transaction": (
            txn_shard.TRANSACTION,
            "tx-1",
            txn.TxnValue(
                42, 3, 60000, txn.ONGOING, {"b": [], "orders": [0, 2]}, 1700000000003, 1700000000000
            ),
        ),
    }


def _written(name: str) -> tuple[bytes, bytes | None]:
    key, value = WRITTEN[name]
    return bytes.fromhex(key), None if value is None else bytes.fromhex(value)


def _registry(name: str) -> Registry[Any]:
    return txn_shard.REGISTRY if name == "transaction" else REGISTRY


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_the_bytes_are_those_written_before(name: str) -> None:
    record_type, key, value = cases()[name]
    record = record_type.tombstone(key) if value is None else record_type.record(key, value)
    assert record == _written(name)


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_the_bytes_written_before_read_back(name: str) -> None:
    record_type, key, value = cases()[name]
    raw_key, raw_value = _written(name)
    assert _registry(name).decode(raw_key, raw_value) == (record_type, key, value)


def test_every_record_type_is_covered() -> None:
    covered = {record_type for record_type, _, _ in cases().values()}
    for registry in (REGISTRY, txn_shard.REGISTRY):
        # type 0, the legacy offset commit key, is read as type 1 is (see below)
        assert set(registry.types.values()) - covered <= {offsets.LEGACY_OFFSET_COMMIT}


def test_a_legacy_offset_commit_key_reads_as_an_offset_commit() -> None:
    key, value = _written("offset commit")
    found = REGISTRY.decode(b"\x00\x00" + key[2:], value)
    assert found is not None
    assert found[0] is offsets.LEGACY_OFFSET_COMMIT
    assert found[1:] == REGISTRY.decode(key, value)[1:]  # type: ignore[index]


def test_unknown_types_are_skipped_by_the_group_registry_and_errors_elsewhere() -> None:
    for type_id in (9, 16, 24, -1):
        assert REGISTRY.decode(type_id.to_bytes(2, "big", signed=True) + b"\x00\x01g", b"") is None
    with pytest.raises(RecordFormatError):
        txn_shard.REGISTRY.decode(b"\x00\x01\x00\x01t", None)
    with pytest.raises(RecordFormatError):
        REGISTRY.decode(b"\x00", None)


def test_type_ids_are_unique() -> None:
    with pytest.raises(ValueError):
        Registry("twice", (consumer.GROUP_EPOCH, consumer.GROUP_EPOCH))


def test_replay_takes_one_record_at_a_time() -> None:
    """The shard a log replays into is the same whether it is replayed whole or in
    slices, with anything between them: replay keeps no state of its own."""
    log = [_written(name) for name in sorted(WRITTEN) if name != "transaction"]
    whole = GroupShard(None, shard_config(BrokerConfig()))
    for offset, (key, value) in enumerate(log):
        whole.replay(offset, key, value, -1)
    sliced = GroupShard(None, shard_config(BrokerConfig()))
    for start in range(0, len(log), 5):
        for offset, (key, value) in enumerate(log[start : start + 5], start):
            sliced.replay(offset, key, value, -1)
    for shard in (whole, sliced):
        assert shard.offsets["grp"][("orders", 7)].offset == 123456789012
        assert shard.groups["gé"].generation == 3
        assert shard.consumer_groups["g"].members["m"].member_epoch == 7
        assert shard.share_groups["s"].metadata_hash == -1234567890123
        assert shard.streams_groups["app"].topology == TOPOLOGY
    assert _state(whole) == _state(sliced)


def _state(shard: GroupShard) -> Any:
    return (
        shard.offsets,
        sorted(shard.groups),
        shard.consumer_groups,
        shard.share_groups,
        shard.streams_groups,
    )
