"""Every coordinator record type writes the very bytes earlier versions of Odradek
wrote (records on disk from an older run must still load), and reads them back."""

from __future__ import annotations

import uuid

import pytest

from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group import records as rec
from odradek.coordinator.group import share_records as shr
from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.runtime import Record
from odradek.coordinator.txn import records as txn

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


def _consumer(kind: int, group: str, member: str, value: bytes) -> Record:
    return cr.encode_key(cr.ConsumerKey(kind, group, member)), value


def _share(kind: int, group: str, member: str, value: bytes) -> Record:
    return shr.encode_key(shr.ShareKey(kind, group, member)), value


def _streams(kind: int, group: str, member: str, value: bytes | None) -> Record:
    return sr.encode_key(sr.StreamsKey(kind, group, member)), value


def written() -> dict[str, Record]:
    members = [
        rec.MemberValue(
            "m1", "i1", "c1", "/10.0.0.1", 300000, 45000, b"\x00\x01sub", b"\x00\x02as"
        ),
        rec.MemberValue("m2", None, "c2", "/10.0.0.2", 60000, 10000, b"", b""),
    ]
    classic = cr.ClassicMetadata(10000, (("range", b"\x00\x01"), ("cooperative-sticky", b"")))
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
    return {
        "offset commit": (
            rec.encode_key(rec.OffsetKey("grp", "orders", 7)),
            rec.encode_offset(rec.OffsetValue(123456789012, 5, "meta", 1700000000000)),
        ),
        "group metadata": (
            rec.encode_key(rec.GroupKey("gé")),
            rec.encode_group(rec.GroupValue("consumer", 3, "range", "m1", 1700000000001, members)),
        ),
        "consumer epoch": _consumer(cr.GROUP_EPOCH, "g", "", cr.encode_epoch(5)),
        "consumer topics": _consumer(
            cr.PARTITION_METADATA,
            "g",
            "",
            cr.encode_partition_metadata(
                [cr.TopicMetadata(T1, "orders", 6), cr.TopicMetadata(T2, "é", 1)]
            ),
        ),
        "consumer member": _consumer(
            cr.MEMBER_METADATA,
            "g",
            "m",
            cr.encode_member(
                cr.MemberMetadata("i", None, "c", "/h", ("a", "b"), None, 300000, "uniform")
            ),
        ),
        "consumer classic member": _consumer(
            cr.MEMBER_METADATA,
            "g",
            "m2",
            cr.encode_member(
                cr.MemberMetadata(None, "r", "c", "/h", (), "t.*", 30000, None, classic)
            ),
        ),
        "consumer target epoch": _consumer(cr.TARGET_EPOCH, "g", "", cr.encode_epoch(4)),
        "consumer target member": _consumer(
            cr.TARGET_MEMBER,
            "g",
            "m",
            cr.encode_target({T1: frozenset({2, 0}), T2: frozenset({1})}),
        ),
        "consumer current": _consumer(
            cr.CURRENT_ASSIGNMENT,
            "g",
            "m",
            cr.encode_current(
                cr.CurrentAssignment(7, 6, 1, {T1: frozenset({0, 1})}, {T2: frozenset({3})})
            ),
        ),
        "share member": _share(
            shr.MEMBER_METADATA,
            "s",
            "m",
            shr.encode_member(shr.MemberMetadata("r", "c", "/h", ("a", "b"))),
        ),
        "share epoch": _share(shr.GROUP_EPOCH, "s", "", shr.encode_group_epoch(3, -1234567890123)),
        "share target epoch": _share(shr.TARGET_EPOCH, "s", "", shr.encode_assignment_epoch(3)),
        "share target member": _share(
            shr.TARGET_MEMBER, "s", "m", shr.encode_target({T1: frozenset({0, 5})})
        ),
        "share current": _share(
            shr.CURRENT_ASSIGNMENT,
            "s",
            "m",
            shr.encode_current(shr.CurrentAssignment(3, 2, 0, {T1: frozenset({0, 5})})),
        ),
        "share state partitions": _share(
            shr.STATE_PARTITIONS, "s", "", shr.encode_state_partitions(state_partitions)
        ),
        "streams metadata": _streams(
            sr.GROUP_METADATA,
            "app",
            "",
            sr.encode_group_metadata(sr.GroupMetadata(4, -99, 2, (("num.standby.replicas", "1"),))),
        ),
        "streams metadata plain": _streams(
            sr.GROUP_METADATA, "app2", "", sr.encode_group_metadata(sr.GroupMetadata(1, 0))
        ),
        "streams legacy": _streams(sr.LEGACY_PARTITION_METADATA, "app", "", None),
        "streams member": _streams(
            sr.MEMBER_METADATA,
            "app",
            "m",
            sr.encode_member(
                sr.MemberMetadata(
                    "i", "r", "c", "/h", 300000, 2, "p1", ("iq.example", 40000), (("zone", "z1"),)
                )
            ),
        ),
        "streams member plain": _streams(
            sr.MEMBER_METADATA,
            "app",
            "m2",
            sr.encode_member(sr.MemberMetadata(None, None, "c", "/h", -1, 1, "p2", None, ())),
        ),
        "streams target epoch": _streams(
            sr.TARGET_EPOCH, "app", "", sr.encode_target_epoch(4, 1700000000002)
        ),
        "streams target epoch plain": _streams(
            sr.TARGET_EPOCH, "app2", "", sr.encode_target_epoch(1, 0)
        ),
        "streams target member": _streams(
            sr.TARGET_MEMBER,
            "app",
            "m",
            sr.encode_target(sr.TargetTasks({"0": frozenset({1, 0})}, {"1": frozenset({2})}, {})),
        ),
        "streams current": _streams(sr.CURRENT_ASSIGNMENT, "app", "m", sr.encode_current(current)),
        "streams topology": _streams(sr.TOPOLOGY, "app", "", sr.encode_topology(TOPOLOGY)),
        "transaction": (
            txn.encode_key("tx-1"),
            txn.encode_value(
                txn.TxnValue(
                    42,
                    3,
                    60000,
                    txn.ONGOING,
                    {"orders": [2, 0], "b": []},
                    1700000000003,
                    1700000000000,
                )
            ),
        ),
    }


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_the_bytes_are_those_written_before(name: str) -> None:
    key, value = written()[name]
    assert key is not None
    assert (key.hex(), None if value is None else value.hex()) == WRITTEN[name]
