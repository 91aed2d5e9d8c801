"""The voter sets of a dynamic quorum, as control records: their bytes, the history a
log makes of them (appended, cut back, restarted from a snapshot), the bootstrap
snapshot and --initial-controllers."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from odradek.broker.cluster.quorum import first_voters, snapshots
from odradek.broker.cluster.quorum.voters import (
    KRAFT_VERSION_RECORD,
    VOTERS_RECORD,
    VoterHistory,
    VoterNode,
    VoterSet,
    found_in,
    parse_voters,
    read_bootstrap,
    voters_batch,
    voters_value,
)
from odradek.protocol.batch import iter_batches, set_base_offset

ONE = VoterNode(1, uuid.UUID(int=1), (("CONTROLLER", "a", 9093),))
TWO = VoterNode(2, uuid.UUID(int=2), (("CONTROLLER", "b", 9093),), (0, 1))


def at(offset: int, batch: bytes) -> bytes:
    data = bytearray(batch)
    set_base_offset(data, 0, offset)
    return bytes(data)


def test_a_voters_record_has_kafkas_layout_and_reads_back() -> None:
    value = voters_value(VoterSet({1: ONE}))
    # version 0, one voter (compact array: 2), id 1, its directory id
    assert value[:7] == b"\x00\x00\x02\x00\x00\x00\x01"
    assert value[7:23] == uuid.UUID(int=1).bytes
    assert parse_voters(value) == VoterSet({1: ONE})


def test_a_batch_holds_the_level_and_the_set_as_control_records() -> None:
    batch = voters_batch(1, VoterSet({1: ONE, 2: TWO}), 0)
    (header,) = iter_batches(batch)
    assert header.is_control
    kinds = [kind for _, kind, _ in found_in(batch)]
    assert kinds == [KRAFT_VERSION_RECORD, VOTERS_RECORD]
    assert [k for _, k, _ in found_in(voters_batch(None, VoterSet({1: ONE}), 0))] == [VOTERS_RECORD]


def test_the_history_follows_appends_cuts_and_snapshots() -> None:
    history = VoterHistory(1, VoterSet({1: ONE}))
    assert history.voters_offset == -1
    assert history.take(at(10, voters_batch(None, VoterSet({1: ONE, 2: TWO}), 0)))
    assert history.voters.ids() == [1, 2] and history.voters_offset == 10
    assert history.voters_at(10).ids() == [1]  # a snapshot ending at 10 holds the old set
    assert history.voters_at(11).ids() == [1, 2]
    history.truncate(10)  # the log cut back before the change: the set before it
    assert history.voters.ids() == [1] and history.voters_offset == -1
    history.restart_at(50, [(VOTERS_RECORD, voters_value(VoterSet({2: TWO})))])
    assert history.voters.ids() == [2] and history.voters_offset == 49
    assert history.kraft_version == 1


def test_the_bootstrap_snapshot_reads_back(tmp_path: Path) -> None:
    first_voters.write_bootstrap(tmp_path, VoterSet({1: ONE}))
    assert read_bootstrap(tmp_path) == (1, VoterSet({1: ONE}))
    assert (
        list(
            snapshots.records_of((tmp_path / snapshots.listed(tmp_path)[0].file_name).read_bytes())
        )
        == []
    )
    empty = tmp_path / "observer"
    empty.mkdir()
    first_voters.write_bootstrap(empty, VoterSet())
    assert read_bootstrap(empty) == (1, None)


def test_initial_controllers_are_read_as_kafka_storage_takes_them() -> None:
    directory = "AAAAAAAAAAAAAAAAAAAAAQ"  # uuid 1, as Kafka prints it
    voters = first_voters.parse_initial_controllers(
        f"1@a:9093:{directory},2@[::1]:9094:{directory}", "CONTROLLER"
    )
    assert voters.nodes[1] == VoterNode(1, uuid.UUID(int=1), (("CONTROLLER", "a", 9093),))
    assert voters.nodes[2].endpoints == (("CONTROLLER", "::1", 9094),)
    for bad in ("1@a:9093", "x@a:1:" + directory, ""):
        with pytest.raises(first_voters.FirstVotersError):
            first_voters.parse_initial_controllers(bad, "CONTROLLER")
