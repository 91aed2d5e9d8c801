"""Log compaction (storage/cleaner.py): what stays, offsets, tombstones, transactions,
codecs, crash safety."""

from __future__ import annotations

import os
import shutil
import struct
import threading
from collections.abc import Callable
from pathlib import Path

import crc32c
import pytest

from odradek.protocol.batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    build_batch,
    crc_matches,
    iter_batches,
    read_header,
)
from odradek.storage import LogConfig, LogSlice, PartitionLog
from odradek.storage import cleaner as cleaner_module
from odradek.storage.batch_rewrite import (
    ATTR_DELETE_HORIZON,
    compress,
    decode_records,
    encode_records,
)
from odradek.storage.batch_rewrite import Record as StoredRecord
from odradek.storage.cleaner import CompactionStats
from odradek.storage.cleaner_files import CLEANED_SUFFIX, SWAP_SUFFIX

NOW = 1_700_000_000_000
HOUR = 3_600_000
Record = tuple[int, bytes | None, bytes | None]  # offset, key, value


# -- helpers ------------------------------------------------------------------------------


def open_log(path: Path, **settings: object) -> PartitionLog:
    options: dict[str, object] = {
        "cleanup_policy": "compact",
        "segment_bytes": 400,
        "segment_ms": HOUR,
        "index_interval_bytes": 100,
    }
    options.update(settings)
    return PartitionLog.open(path, LogConfig(**options))  # type: ignore[arg-type]


def append(log: PartitionLog, batch: bytes, now: int = NOW) -> int:
    data = bytearray(batch)
    return log.append(data, list(iter_batches(data)), leader_epoch=0, now_ms=now).first_offset


def put(log: PartitionLog, key: bytes | None, value: bytes | None, stamp: int = NOW) -> int:
    return append(log, build_batch([(key, value)], timestamp=stamp))


def seal(log: PartitionLog) -> None:
    """Roll the active segment (so everything is cleanable) and fsync."""
    log.roll_if_due(NOW + 2 * HOUR)
    log.flush()


def contents(log: PartitionLog) -> list[Record]:
    out = []
    for header, batch in log.iter_batches():
        assert crc_matches(batch, header)
        records = decode_records(header, batch)
        assert records is not None
        out += [(header.base_offset + r.offset_delta, r.key, r.value) for r in records]
    return out


def latest(records: list[Record], end: int) -> list[Record]:
    """What compaction of [0, end) keeps (tombstones included): the last record of each key."""
    last = {key: offset for offset, key, _value in records if offset < end}
    return [r for r in records if r[0] >= end or (r[1] is not None and last[r[1]] == r[0])]


def files(directory: Path) -> dict[str, tuple[int, int]]:
    return {
        name: (os.stat(directory / name).st_ino, os.stat(directory / name).st_mtime_ns)
        for name in os.listdir(directory)
    }


def control_batch(producer_id: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    return build_batch(
        [(key, struct.pack(">hi", 0, 0))],
        timestamp=NOW,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        producer_id=producer_id,
        producer_epoch=0,
    )


def txn_batch(producer_id: int, key: bytes, value: bytes, sequence: int = 0) -> bytes:
    return build_batch(
        [(key, value)],
        timestamp=NOW,
        attributes=ATTR_TRANSACTIONAL,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
    )


def compressed(
    records: list[tuple[bytes | None, bytes | None]], codec: int, stamp: int = NOW
) -> bytes:
    plain = build_batch(records, timestamp=stamp)
    payload = compress(codec, plain[HEADER_SIZE:])
    assert payload is not None
    batch = bytearray(plain[:HEADER_SIZE] + payload)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, 21, codec)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "compacted-0"


# -- what stays ---------------------------------------------------------------------------


def test_keys_overwritten_many_times_keep_only_the_last_value(directory: Path) -> None:
    log = open_log(directory)
    for i in range(300):
        put(log, b"key-%d" % (i % 7), b"value-%d" % i)
    seal(log)
    before = contents(log)
    stats = log.compact(NOW)
    assert stats.cleaned and stats.first_dirty_offset == 300
    assert stats.records_removed == 293
    assert contents(log) == latest(before, 300)
    assert {key: value for _o, key, value in contents(log)} == {
        b"key-%d" % (i % 7): b"value-%d" % i for i in range(293, 300)
    }
    assert log.log_start_offset == 0 and log.log_end_offset == 300
    assert log.size_bytes() < 1000


def test_offsets_reads_and_timestamps_survive(directory: Path) -> None:
    log = open_log(directory)
    for i in range(60):
        put(log, b"k%d" % (i % 10 if i < 50 else i), b"v%d" % i, stamp=NOW + i)
    seal(log)
    slice_before = log.read(0, 1 << 20)
    assert slice_before is not None
    old_bytes = slice_before.read()
    before = contents(log)
    log.compact(NOW)
    kept = contents(log)
    assert kept == latest(before, 60)
    for offset, key, value in kept:
        piece = log.read(offset, 1)
        assert piece is not None
        first = next(iter_batches(piece.read()))
        assert first.base_offset <= offset <= first.last_offset
        found = {(first.base_offset + r.offset_delta, r.key, r.value) for r in _records(piece)}
        assert (offset, key, value) in found
    # A read of a removed offset answers the next batch kept.
    piece = log.read(0, 1)
    assert piece is not None and next(iter_batches(piece.read())).base_offset == kept[0][0]
    for target in range(0, 62, 3):
        expected = next(((o, NOW + o) for o, _k, _v in kept if NOW + o >= NOW + target), None)
        assert log.offset_for_timestamp(NOW + target) == expected
    assert log.max_timestamp() == (59, NOW + 59)
    # A slice read before the compaction still reads the old file.
    assert slice_before.read() == old_bytes


def _records(piece: LogSlice) -> list[StoredRecord]:
    data = piece.read()
    out: list[StoredRecord] = []
    for header in iter_batches(data):
        batch = data[header.position : header.position + header.size]
        out += decode_records(read_header(batch), batch) or []
    return out


def test_the_active_segment_is_never_touched(directory: Path) -> None:
    log = open_log(directory, min_cleanable_dirty_ratio=0.0)
    for i in range(40):
        put(log, b"same", b"v%d" % i)
    log.flush()
    active = sorted(directory.glob("*.log"))[-1]
    active_bytes = active.read_bytes()
    assert log.compact(NOW).cleaned
    assert active.read_bytes() == active_bytes
    same = [o for o, key, _v in contents(log) if key == b"same"]
    assert len(same) > 1  # the active segment still has every one of its copies
    assert same[-1] == 39


def test_keyless_records_go_and_the_model_holds_with_many_segments(directory: Path) -> None:
    log = open_log(directory)
    for i in range(100):
        put(log, None if i % 9 == 0 else b"k%d" % (i % 13), b"v%d" % i)
    seal(log)
    before = contents(log)
    log.compact(NOW)
    expected = [r for r in latest([r for r in before if r[1] is not None], 100)]
    assert contents(log) == expected


# -- tombstones ---------------------------------------------------------------------------


def test_tombstones_stay_for_delete_retention_then_go(directory: Path) -> None:
    log = open_log(directory, delete_retention_ms=1000)
    for i in range(30):
        put(log, b"k%d" % (i % 3), b"v%d" % i)
    put(log, b"k1", None)
    put(log, b"k2", None)
    seal(log)
    stats = log.compact(NOW)
    assert stats.cleaned and stats.tombstones_removed == 0
    kept = contents(log)
    assert [(key, value) for _o, key, value in kept] == [
        (b"k0", b"v27"),
        (b"k1", None),
        (b"k2", None),
    ]
    stamped = [h for h, _b in log.iter_batches() if h.attributes & ATTR_DELETE_HORIZON]
    assert [h.base_timestamp for h in stamped] == [NOW + 1000, NOW + 1000]
    assert log.compact(NOW + 999).cleaned is False  # nothing dirty, horizon not yet
    stats = log.compact(NOW + 1000)
    assert stats.cleaned and stats.tombstones_removed == 2
    assert [(o, key, value) for o, key, value in contents(log)] == [(27, b"k0", b"v27")]
    assert log.compact(NOW + 5000).cleaned is False  # nothing left to do


def test_a_stamped_batch_keeps_its_record_timestamps(directory: Path) -> None:
    log = open_log(directory, delete_retention_ms=1000)
    append(log, build_batch([(b"a", b"1"), (b"b", None)], timestamp=NOW + 5))
    put(log, b"c", b"2", stamp=NOW + 9)
    seal(log)
    log.compact(NOW)
    header, batch = next(log.iter_batches())
    assert header.attributes & ATTR_DELETE_HORIZON
    assert header.max_timestamp == NOW + 5
    assert log.offset_for_timestamp(NOW + 5) == (0, NOW + 5)
    assert log.offset_for_timestamp(NOW + 6) == (2, NOW + 9)


# -- no-ops -------------------------------------------------------------------------------


def test_nothing_happens_below_the_dirty_ratio(directory: Path) -> None:
    log = open_log(directory)
    for i in range(60):
        put(log, b"k%d" % i, b"v%d" % i)  # nothing to remove
    seal(log)
    assert log.compact(NOW).cleaned
    before = files(directory)
    put(log, b"k1", b"new")
    seal(log)
    listing = files(directory)
    stats = log.compact(NOW)
    assert stats == CompactionStats()
    assert files(directory) == listing
    assert set(before) <= set(listing)


def test_unchanged_segments_are_not_rewritten(directory: Path) -> None:
    log = open_log(directory)
    for i in range(40):
        put(log, b"k%d" % i, b"v%d" % i)
    seal(log)
    segments = {name: value for name, value in files(directory).items() if name.endswith(".log")}
    stats = log.compact(NOW)
    assert stats.cleaned and stats.segments_written == 0
    after = {name: value for name, value in files(directory).items() if name.endswith(".log")}
    assert after == segments


def test_delete_only_topics_are_not_compacted(directory: Path) -> None:
    log = open_log(directory, cleanup_policy="delete")
    for _ in range(30):
        put(log, b"k", b"v")
    seal(log)
    assert log.compact(NOW).cleaned is False
    assert len(contents(log)) == 30


def test_min_compaction_lag(directory: Path) -> None:
    log = open_log(directory, min_compaction_lag_ms=10_000)
    for i in range(30):
        put(log, b"k", b"v%d" % i)
    seal(log)
    assert log.compact(NOW + 5_000).cleaned is False
    assert log.compact(NOW + 10_000).cleaned
    assert [value for _o, _k, value in contents(log)] == [b"v29"]


def test_segments_waiting_for_their_fsync_are_left_alone(directory: Path) -> None:
    log = open_log(directory)
    for i in range(30):
        put(log, b"k", b"v%d" % i)
    log.roll_if_due(NOW + 2 * HOUR)
    assert log.compact(NOW).cleaned is False
    log.flush()
    assert log.compact(NOW).cleaned


# -- transactions and producers -----------------------------------------------------------


def test_an_open_transaction_is_not_cleaned(directory: Path) -> None:
    log = open_log(directory)
    for i in range(12):
        put(log, b"k", b"before-%d" % i)
    txn_offset = append(log, txn_batch(7, b"k", b"in-txn"))
    for i in range(30):
        put(log, b"k", b"after-%d" % i)
    seal(log)
    log.compact(NOW)
    kept = contents(log)
    assert (txn_offset, b"k", b"in-txn") in kept
    assert all(value != b"before-0" for _o, _k, value in kept)  # cleaned before it
    assert len([r for r in kept if r[0] > txn_offset]) == 30  # nothing after it
    # Once the transaction ends, the rest is cleaned.
    append(log, control_batch(7, commit=True))
    put(log, b"k", b"last")
    seal(log)
    log.compact(NOW)
    assert [value for _o, key, value in contents(log) if key == b"k"] == [b"last"]


def test_aborted_data_goes_committed_data_counts(directory: Path) -> None:
    log = open_log(directory, delete_retention_ms=1000, min_cleanable_dirty_ratio=0.0)
    put(log, b"a", b"plain")
    aborted = append(log, txn_batch(8, b"a", b"aborted"))
    append(log, control_batch(8, commit=False))
    committed = append(log, txn_batch(9, b"b", b"committed"))
    commit_marker = append(log, control_batch(9, commit=True))
    for i in range(20):
        put(log, b"c", b"%d" % i)
    seal(log)
    log.compact(NOW, producer_ids=set())
    kept = contents(log)
    assert (0, b"a", b"plain") in kept  # an aborted write does not replace it
    assert all(offset != aborted for offset, _k, _v in kept)
    assert (committed, b"b", b"committed") in kept
    markers = [h for h, _b in log.iter_batches() if h.is_control]
    # The abort marker has no data left: stamped; the commit marker still marks "b".
    assert [(h.producer_id, bool(h.attributes & ATTR_DELETE_HORIZON)) for h in markers] == [
        (8, True),
        (9, False),
    ]
    assert log.compact(NOW + 1000, producer_ids=set()).markers_removed == 1
    markers = [h for h, _b in log.iter_batches() if h.is_control]
    assert [h.base_offset for h in markers] == [commit_marker]
    # When "b" is overwritten, its transaction's marker goes too (after the horizon).
    put(log, b"b", b"plain")
    seal(log)
    log.compact(NOW + 2000, producer_ids=set())
    log.compact(NOW + 3000, producer_ids=set())
    assert not [h for h, _b in log.iter_batches() if h.is_control]


def test_the_last_batch_of_a_producer_stays_empty(directory: Path) -> None:
    log = open_log(directory, min_cleanable_dirty_ratio=0.0)
    batch = build_batch(
        [(b"x", b"1"), (b"y", b"2")],
        timestamp=NOW,
        producer_id=5,
        producer_epoch=3,
        base_sequence=7,
    )
    first = append(log, batch)
    for i in range(20):
        put(log, b"x" if i % 2 else b"y", b"%d" % i)
    seal(log)
    log.compact(NOW)
    header = next(h for h, _b in log.iter_batches() if h.producer_id == 5)
    assert (header.base_offset, header.last_offset, header.records_count) == (first, first + 1, 0)
    assert (header.producer_epoch, header.base_sequence, header.last_sequence) == (3, 7, 8)
    # Without producer state to keep, it goes.
    put(log, b"z", b"more")
    seal(log)
    log.compact(NOW, producer_ids=set())
    assert all(h.producer_id != 5 for h, _b in log.iter_batches())


def test_a_partly_compacted_batch_keeps_its_offsets_and_sequences(directory: Path) -> None:
    log = open_log(directory)
    batch = build_batch(
        [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")],
        timestamp=NOW,
        producer_id=4,
        producer_epoch=0,
        base_sequence=10,
    )
    append(log, batch)
    put(log, b"a", b"new")
    put(log, b"c", b"new")
    seal(log)
    log.compact(NOW)
    header, data = next(log.iter_batches())
    assert (header.base_offset, header.last_offset, header.records_count) == (0, 2, 1)
    assert (header.base_sequence, header.last_sequence) == (10, 12)
    assert [(r.offset_delta, r.key) for r in decode_records(header, data) or []] == [(1, b"b")]


# -- codecs -------------------------------------------------------------------------------


def test_a_gzip_batch_is_compacted_and_stays_gzip(directory: Path) -> None:
    log = open_log(directory)
    pairs: list[tuple[bytes | None, bytes | None]] = [
        (b"k%d" % i, b"value-%d" % i * 3) for i in range(6)
    ]
    append(log, compressed(pairs, 1))
    put(log, b"k1", b"new")
    put(log, b"k4", b"new")
    seal(log)
    log.compact(NOW)
    header, data = next(log.iter_batches())
    assert header.compression == 1 and crc_matches(data, header)
    assert header.base_offset == 0 and header.last_offset == 5
    assert [(r.offset_delta, r.key) for r in decode_records(header, data) or []] == [
        (0, b"k0"),
        (2, b"k2"),
        (3, b"k3"),
        (5, b"k5"),
    ]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_every_codec_is_written_back_readable_by_another_client(
    directory: Path, codec: int
) -> None:
    kafka_codec = pytest.importorskip("kafka.codec")
    decoders: dict[int, Callable[[bytes], bytes]] = {
        1: kafka_codec.gzip_decode,
        2: kafka_codec.snappy_decode,
        3: kafka_codec.lz4_decode,
        4: kafka_codec.zstd_decode,
    }
    log = open_log(directory, segment_bytes=100_000)
    pairs: list[tuple[bytes | None, bytes | None]] = [
        (b"k%d" % (i % 50), b"v%d" % i * 40)
        for i in range(400)  # several snappy blocks
    ]
    append(log, compressed(pairs, codec))
    put(log, b"other", b"x")
    log.roll_if_due(NOW + 2 * HOUR)
    log.flush()
    log.compact(NOW)
    header, data = next(log.iter_batches())
    assert header.compression == codec and header.records_count == 50
    records = decode_records(header, data) or []
    assert decoders[codec](bytes(data[HEADER_SIZE:])) == encode_records(records)
    assert [(r.offset_delta, r.key, r.value) for r in records] == [
        (350 + i, *pair) for i, pair in enumerate(pairs[-50:])
    ]


def test_a_batch_that_cannot_be_decoded_is_kept_whole(directory: Path) -> None:
    log = open_log(directory)
    odd = bytearray(build_batch([(b"k", b"v")], timestamp=NOW))
    struct.pack_into(">h", odd, 21, 5)  # no such codec
    struct.pack_into(">I", odd, 17, crc32c.crc32c(bytes(odd[21:])))
    append(log, bytes(odd))
    for i in range(10):
        put(log, b"k", b"%d" % i)
    seal(log)
    stats = log.compact(NOW)
    assert stats.batches_not_decoded == 1
    first, data = next(log.iter_batches())
    assert first.base_offset == 0 and data == bytes(odd[:8]) + data[8:]


# -- merging, reopening, crashes ----------------------------------------------------------


def _fill(log: PartitionLog, rounds: int, keys: int) -> None:
    for i in range(rounds):
        put(log, b"k%d" % (i % keys), b"v%d-%d" % (i, log.log_end_offset), stamp=NOW + i)


def test_small_cleaned_segments_are_merged(directory: Path) -> None:
    log = open_log(directory)
    _fill(log, 200, 5)
    seal(log)
    log.compact(NOW)
    many = log.segment_count
    _fill(log, 200, 5)
    seal(log)
    before = contents(log)
    unmerged = log.segment_count
    assert unmerged > many
    log.compact(NOW)
    # The segments cleaned by the first pass (small now) went into one or two.
    assert log.segment_count <= unmerged - many + 2
    assert contents(log) == latest(before, log.log_end_offset)
    log.close()
    reopened = open_log(directory)
    assert not reopened.recovered_by_scan
    assert contents(reopened) == latest(before, reopened.log_end_offset)


def test_reopen_after_clean_close_and_after_a_crash(
    directory: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log(directory, delete_retention_ms=1000)
    _fill(log, 150, 9)
    put(log, b"k3", None)
    seal(log)
    log.compact(NOW)
    kept = contents(log)
    log.close()
    caplog.clear()
    reopened = open_log(directory)
    assert not reopened.recovered_by_scan
    assert contents(reopened) == kept
    for offset, _key, _value in kept:
        assert reopened.read(offset, 1) is not None
    assert "rebuilding" not in caplog.text
    put(reopened, b"k5", b"after")
    # A crash: no close, the next open scans.
    crashed = open_log(directory)
    assert crashed.recovered_by_scan
    assert contents(crashed) == [*kept, (crashed.log_end_offset - 1, b"k5", b"after")]
    seal(crashed)
    assert crashed.compact(NOW + 1000).tombstones_removed == 1


class Crash(Exception):
    pass


# Steps (file deletions and directory fsyncs) of the second pass below: 0 is the
# fsync after the merged group's rename to .swap, 1-39 delete the merged segments,
# 40 the old index, 41 the fsync after the swap; then one segment at a time.
@pytest.mark.parametrize("crash_at", [0, 1, 20, 39, 40, 41, 42, 43, 50, 10_000])
def test_a_crash_at_any_step_leaves_the_old_or_the_new_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: int
) -> None:
    source = tmp_path / "source"
    log = open_log(source)
    _fill(log, 200, 5)
    seal(log)
    log.compact(NOW)  # small segments: the next pass merges them
    _fill(log, 150, 5)
    seal(log)
    old = contents(log)
    log.close()
    expected_dir = tmp_path / "expected"
    shutil.copytree(source, expected_dir)
    expected_log = open_log(expected_dir)
    expected_log.compact(NOW)
    new = contents(expected_log)
    assert new != old

    crashing = tmp_path / "crashing"
    shutil.copytree(source, crashing)
    log = open_log(crashing)
    calls = 0

    def step(original: Callable[..., None]) -> Callable[..., None]:
        def wrapped(*args: object) -> None:
            nonlocal calls
            calls += 1
            if calls > crash_at:
                raise Crash
            original(*args)

        return wrapped

    monkeypatch.setattr(cleaner_module, "unlink", step(cleaner_module.unlink))
    monkeypatch.setattr(cleaner_module, "fsync_dir", step(cleaner_module.fsync_dir))
    try:
        log.compact(NOW)
        crashed = False
    except Crash:
        crashed = True
    monkeypatch.undo()

    after = open_log(crashing)
    leftovers = [n for n in os.listdir(crashing) if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]
    assert leftovers == []
    got = contents(after)
    if not crashed:
        assert got == new
    else:
        # Group by group: each part of the log is either as it was or as cleaned.
        assert set(got) <= set(old)
        assert set(new) <= set(got)
    after.compact(NOW)
    assert contents(after) == new


def test_leftover_cleaned_and_swap_files_at_open(directory: Path) -> None:
    log = open_log(directory)
    _fill(log, 60, 4)
    seal(log)
    old = contents(log)
    log.close()
    bases = sorted(int(p.stem) for p in directory.glob("*.log"))
    (directory / f"{bases[0]:020d}{CLEANED_SUFFIX}").write_bytes(b"half written")
    reopened = open_log(directory)
    assert contents(reopened) == old
    assert not list(directory.glob(f"*{CLEANED_SUFFIX}"))
    reopened.close()
    # A swap of the first three segments into one (here: their batches, unchanged).
    merged = b"".join((directory / f"{b:020d}.log").read_bytes() for b in bases[:3])
    swap = directory / f"{bases[0]:020d}.{bases[3]:020d}{SWAP_SUFFIX}"
    swap.write_bytes(merged)
    (directory / f"{bases[1]:020d}.log").unlink()  # the crash came while deleting
    reopened = open_log(directory)
    assert contents(reopened) == old
    assert sorted(int(p.stem) for p in directory.glob("*.log")) == [bases[0], *bases[3:]]
    assert not list(directory.glob(f"*{SWAP_SUFFIX}"))


def test_config_names() -> None:
    base = LogConfig()
    assert (base.delete_retention_ms, base.min_cleanable_dirty_ratio) == (86_400_000, 0.5)
    assert base.min_compaction_lag_ms == 0
    config = LogConfig.from_topic_configs(
        {
            "delete.retention.ms": "100",
            "min.cleanable.dirty.ratio": "0.1",
            "min.compaction.lag.ms": "5",
        },
        base,
    )
    assert (config.delete_retention_ms, config.min_cleanable_dirty_ratio) == (100, 0.1)
    assert config.min_compaction_lag_ms == 5
    assert LogConfig.from_topic_configs(config.to_topic_configs(), base) == config
    for bad in ({"min.cleanable.dirty.ratio": "1.5"}, {"delete.retention.ms": "-1"}):
        with pytest.raises(ValueError):
            LogConfig.from_topic_configs(bad, base)


def test_compaction_in_a_thread_while_appending_and_reading(directory: Path) -> None:
    log = open_log(directory, min_cleanable_dirty_ratio=0.0, delete_retention_ms=0)
    stop = threading.Event()
    errors: list[BaseException] = []

    def clean() -> None:
        try:
            while not stop.is_set():
                log.compact(NOW)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=clean)
    worker.start()
    try:
        for i in range(600):
            put(log, b"k%d" % (i % 11), b"v%d" % i)
            if i % 25 == 0:
                log.roll_if_due(NOW + 2 * HOUR)
                log.flush()
                values = [v for _o, _k, v in contents(log)]
                assert values[-1] == b"v%d" % i
    finally:
        stop.set()
        worker.join()
    assert not errors
    seal(log)
    log.compact(NOW)
    assert {key: value for _o, key, value in contents(log)} == {
        b"k%d" % (i % 11): b"v%d" % i for i in range(589, 600)
    }
