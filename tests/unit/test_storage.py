"""The partition log (storage/): offsets, reads, rolls, retention, timestamps, recovery."""

from __future__ import annotations

import gzip
import os
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.batch import (
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    BatchHeader,
    build_batch,
    crc_matches,
    iter_batches,
    read_header,
    varint,
)
from odradek.storage import AppendInfo, LogConfig, LogSlice, OffsetOutOfRange, PartitionLog
from odradek.storage.log import CLEAN_SHUTDOWN, LEADER_EPOCH_CHECKPOINT

NOW = 1_700_000_000_000
GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4


# -- helpers ----------------------------------------------------------------------------


def make_batch(
    timestamps: list[int],
    *,
    compression: int = 0,
    compress: Callable[[bytes], bytes] | None = None,
    value_size: int = 10,
) -> bytes:
    """A batch with one record per timestamp, the records section optionally compressed."""
    base = timestamps[0]
    records = bytearray()
    for delta, stamp in enumerate(timestamps):
        body = b"\x00" + varint(stamp - base) + varint(delta)
        body += varint(-1) + varint(value_size) + bytes([delta % 256]) * value_size
        body += varint(0)
        records += varint(len(body)) + body
    payload = compress(bytes(records)) if compress else bytes(records)
    header = struct.pack(
        ">qiibIhiqqqhii",
        0,
        HEADER_SIZE - 12 + len(payload),
        -1,
        2,
        0,
        compression,
        len(timestamps) - 1,
        base,
        max(timestamps),
        -1,
        -1,
        -1,
        len(timestamps),
    )
    batch = bytearray(header + payload)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def batch_of(count: int, size: int = 10, timestamp: int = NOW) -> bytes:
    return build_batch([(None, b"v" * size)] * count, timestamp=timestamp)


def append(log: PartitionLog, *batches: bytes, epoch: int = 0, now: int = NOW) -> AppendInfo:
    data = bytearray(b"".join(batches))
    headers = list(iter_batches(data))
    return log.append(data, headers, leader_epoch=epoch, now_ms=now)


def headers_of(piece: LogSlice | None) -> list[BatchHeader]:
    assert piece is not None
    return list(iter_batches(piece.read()))


def open_log(path: Path, **settings: object) -> PartitionLog:
    return PartitionLog.open(path, LogConfig(**settings))  # type: ignore[arg-type]


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


# -- appending and reading -----------------------------------------------------------------


def test_append_assigns_offsets_and_read_returns_them(directory: Path) -> None:
    log = open_log(directory)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    first = append(log, batch_of(3))
    second = append(log, batch_of(1), batch_of(2))
    assert first == AppendInfo(0, 2, -1, 0)
    assert second == AppendInfo(3, 5, -1, 0)
    assert log.log_end_offset == 6
    headers = headers_of(log.read(0, 1 << 20))
    assert [(h.base_offset, h.last_offset) for h in headers] == [(0, 2), (3, 3), (4, 5)]
    assert all(h.partition_leader_epoch == 0 for h in headers)
    assert (directory / "00000000000000000000.log").stat().st_size == log.size_bytes()


def test_read_from_the_middle_of_a_batch_starts_at_that_batch(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(3), batch_of(3), batch_of(3))
    assert [h.base_offset for h in headers_of(log.read(4, 1 << 20))] == [3, 6]
    assert [h.base_offset for h in headers_of(log.read(8, 1 << 20))] == [6]


def test_read_at_log_end_is_none_and_outside_the_log_is_out_of_range(directory: Path) -> None:
    log = open_log(directory)
    assert log.read(0, 100) is None
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 100)
    append(log, batch_of(2))
    assert log.read(2, 100) is None
    with pytest.raises(OffsetOutOfRange):
        log.read(3, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_max_bytes_takes_whole_batches_and_min_one_the_first_anyway(directory: Path) -> None:
    log = open_log(directory)
    batch = batch_of(1, size=100)
    append(log, batch, batch, batch)
    size = len(batch)
    assert [h.base_offset for h in headers_of(log.read(0, size * 2 + size // 2))] == [0, 1]
    assert [h.base_offset for h in headers_of(log.read(0, size))] == [0]
    assert [h.base_offset for h in headers_of(log.read(1, 10))] == [1]
    assert log.read(1, 10, min_one=False) is None
    piece = log.read(0, size * 3)
    assert piece is not None and piece.size == size * 3 and piece.position == 0


def test_reads_across_many_index_entries(directory: Path) -> None:
    log = open_log(directory, index_interval_bytes=100)
    batches = [batch_of(1 + i % 3, size=40 + i) for i in range(200)]
    for batch in batches:
        append(log, batch)
    offsets = [h.base_offset for h in iter_batches(log.read(0, 1 << 30).read())]  # type: ignore[union-attr]
    assert len(offsets) == 200
    for target in range(log.log_end_offset):
        piece = headers_of(log.read(target, 1000))
        assert piece[0].base_offset <= target <= piece[0].last_offset
        assert sum(h.size for h in piece) <= 1000
        # the limit is used well: the next batch would not have fitted
        following = [h for h in iter_batches(log.read(0, 1 << 30).read())]  # type: ignore[union-attr]
        after = [h for h in following if h.base_offset > piece[-1].base_offset]
        if after:
            assert sum(h.size for h in piece) + after[0].size > 1000


def test_max_offset_stops_before_batches_starting_at_or_after_it(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(2), batch_of(2), batch_of(2))
    assert [h.base_offset for h in headers_of(log.read(0, 1 << 20, max_offset=4))] == [0, 2]
    assert [h.base_offset for h in headers_of(log.read(0, 1 << 20, max_offset=3))] == [0, 2]
    assert [h.base_offset for h in headers_of(log.read(0, 1 << 20, max_offset=2))] == [0]
    assert log.read(4, 1 << 20, max_offset=4) is None
    assert log.read(0, 1 << 20, max_offset=0) is None


def test_log_append_time_stamps_max_timestamp_and_keeps_the_crc_valid(directory: Path) -> None:
    log = open_log(directory, message_timestamp_type="LogAppendTime")
    info = append(log, batch_of(2, timestamp=5), now=NOW + 7)
    assert info.log_append_time == NOW + 7
    data = log.read(0, 1 << 20).read()  # type: ignore[union-attr]
    header = read_header(data)
    assert header.max_timestamp == NOW + 7
    assert header.attributes & ATTR_TIMESTAMP_TYPE
    assert crc_matches(data, header)
    assert log.offset_for_timestamp(NOW) == (0, NOW + 7)


def test_append_as_is_requires_the_log_end_offset(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(2))
    marker = build_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")], base_offset=2)
    with pytest.raises(ValueError):
        log.append_as_is(build_batch([(None, b"x")], base_offset=5), [read_header(batch_of(1))])
    info = log.append_as_is(marker, list(iter_batches(marker)), now_ms=NOW)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (2, 2, 3)
    assert [h.base_offset for h in headers_of(log.read(0, 1 << 20))] == [0, 2]


def test_iter_batches_from_an_offset(directory: Path) -> None:
    log = open_log(directory, segment_bytes=300)
    for i in range(20):
        append(log, batch_of(2, size=20 + i))
    assert log.segment_count > 3
    seen = list(log.iter_batches())
    assert [h.base_offset for h, _ in seen] == list(range(0, 40, 2))
    for header, data in seen:
        assert header.position == 0 and len(data) == header.size and crc_matches(data, header)
    assert [h.base_offset for h, _ in log.iter_batches(15)] == list(range(14, 40, 2))
    big = batch_of(1, size=3 << 20)
    append(log, big)
    assert [len(d) for _, d in log.iter_batches(40)] == [len(big)]


# -- rolling and retention ----------------------------------------------------------------


def test_roll_by_size(directory: Path) -> None:
    batch = batch_of(1, size=100)
    log = open_log(directory, segment_bytes=len(batch) * 3)
    for _ in range(10):
        append(log, batch)
    names = sorted(p.name for p in directory.glob("*.log"))
    assert names == [f"{base:020d}.log" for base in (0, 3, 6, 9)]
    assert (directory / "00000000000000000000.index").exists()
    assert (directory / "00000000000000000000.timeindex").exists()
    for offset in range(10):
        assert headers_of(log.read(offset, 1 << 20))[0].base_offset == offset
    # one read never spans two segments
    assert [h.base_offset for h in headers_of(log.read(0, 1 << 20))] == [0, 1, 2]


def test_an_oversized_batch_goes_alone_into_a_fresh_segment(directory: Path) -> None:
    log = open_log(directory, segment_bytes=200)
    append(log, batch_of(1))
    append(log, batch_of(1, size=500))
    append(log, batch_of(1))
    assert sorted(p.name[:20] for p in directory.glob("*.log")) == [f"{b:020d}" for b in (0, 1, 2)]


def test_large_appends_reserve_blocks_ahead_and_a_roll_gives_them_back(directory: Path) -> None:
    batch = batch_of(300, size=1000)  # about 300 KB: large enough to reserve ahead
    log = open_log(directory, segment_bytes=len(batch) * 2)
    first = directory / "00000000000000000000.log"
    append(log, batch)
    stat = first.stat()
    assert stat.st_size == len(batch)  # the file size is only what was written
    assert stat.st_blocks * 512 >= len(batch) + 8 * 1024 * 1024  # blocks reserved past it
    log = open_log(directory, segment_bytes=len(batch) * 2)  # as after kill -9
    assert log.recovered_by_scan and log.log_end_offset == 300
    append(log, batch)
    append(log, batch)  # rolls: the first segment is sealed
    assert first.stat().st_blocks * 512 < len(batch) * 2 + 64 * 1024
    assert [h.base_offset for h in headers_of(log.read(0, 1 << 22))] == [0, 300]
    log.close()
    second = directory / f"{600:020d}.log"
    assert second.stat().st_blocks * 512 < len(batch) + 64 * 1024


def test_roll_by_time(directory: Path) -> None:
    log = open_log(directory, segment_ms=1000)
    append(log, batch_of(1), now=NOW)
    append(log, batch_of(1), now=NOW + 999)
    assert log.segment_count == 1
    append(log, batch_of(1), now=NOW + 1000)
    assert log.segment_count == 2
    log.roll_if_due(NOW + 1500)
    assert log.segment_count == 2
    log.roll_if_due(NOW + 2000)
    assert log.segment_count == 3
    log.roll_if_due(NOW + 9000)  # an empty segment is never rolled
    assert log.segment_count == 3
    assert log.log_end_offset == 3


def test_retention_by_time_deletes_old_segments(directory: Path) -> None:
    batch_size = len(batch_of(1))
    log = open_log(directory, segment_bytes=batch_size * 2, retention_ms=10_000)
    for i in range(6):
        append(log, batch_of(1, timestamp=NOW + i * 1000), now=NOW + i * 1000)
    assert log.segment_count == 3
    assert log.apply_retention(NOW + 11_000) == 0  # not more than retention.ms old yet
    assert log.apply_retention(NOW + 11_001) == 1  # segment [0, 1]: newest at NOW + 1000
    assert log.log_start_offset == 2
    assert not (directory / "00000000000000000000.log").exists()
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 100)
    assert headers_of(log.read(2, 100))[0].base_offset == 2
    assert log.apply_retention(NOW + 11_001) == 0
    # everything expired: the active segment goes too, after a roll
    assert log.apply_retention(NOW + 100_000) == 2
    assert (log.log_start_offset, log.log_end_offset, log.segment_count) == (6, 6, 1)
    assert append(log, batch_of(1)).first_offset == 6


def test_retention_by_size_keeps_the_newest_bytes(directory: Path) -> None:
    batch = batch_of(1)
    log = open_log(directory, segment_bytes=len(batch) * 2, retention_bytes=len(batch) * 3)
    for _ in range(7):
        append(log, batch)
    assert log.size_bytes() == len(batch) * 7
    assert log.apply_retention(NOW) == 2
    assert log.size_bytes() == len(batch) * 3
    assert log.log_start_offset == 4


def test_retention_does_nothing_for_compacted_topics(directory: Path) -> None:
    log = open_log(directory, segment_bytes=100, retention_ms=0, cleanup_policy="compact")
    for _ in range(5):
        append(log, batch_of(1))
    assert log.apply_retention(NOW + 10**9) == 0


def test_a_slice_stays_readable_after_its_segment_is_deleted(directory: Path) -> None:
    batch = batch_of(1, size=100)
    log = open_log(directory, segment_bytes=len(batch), retention_ms=0)
    append(log, batch)
    append(log, batch)
    piece = log.read(0, 1 << 20)
    assert piece is not None
    assert log.apply_retention(NOW + 1) >= 1
    assert not piece.path.exists()
    assert os.pread(piece.fileno(), piece.size, piece.position) == piece.read()
    assert read_header(piece.read()).base_offset == 0


def test_delete_records_before_moves_the_log_start_and_survives_reopen(directory: Path) -> None:
    log = open_log(directory, segment_bytes=len(batch_of(2)) * 2)
    for _ in range(5):
        append(log, batch_of(2))
    assert log.delete_records_before(5) == 5
    assert log.delete_records_before(3) == 5
    assert log.log_start_offset == 5
    assert not (directory / "00000000000000000000.log").exists()  # offsets 0-3
    assert [h.base_offset for h in headers_of(log.read(5, 1 << 20))] == [4, 6]
    with pytest.raises(OffsetOutOfRange):
        log.read(4, 100)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(11)
    log.close()
    log = open_log(directory)
    assert (log.log_start_offset, log.log_end_offset) == (5, 10)
    assert log.offset_for_timestamp(0) == (5, NOW)
    # and after a crash (no close)
    log.delete_records_before(7)
    log = open_log(directory)
    assert (log.log_start_offset, log.log_end_offset) == (7, 10)
    assert log.delete_records_before(10) == 10
    assert log.read(10, 100) is None


# -- timestamps ---------------------------------------------------------------------------


def test_offset_for_timestamp_finds_the_first_record_at_or_after(directory: Path) -> None:
    log = open_log(directory, index_interval_bytes=0)
    append(log, make_batch([NOW + 10, NOW + 30, NOW + 20]))  # offsets 0-2
    append(log, make_batch([NOW + 25, NOW + 40]))  # offsets 3-4
    assert log.offset_for_timestamp(0) == (0, NOW + 10)
    assert log.offset_for_timestamp(NOW + 10) == (0, NOW + 10)
    assert log.offset_for_timestamp(NOW + 11) == (1, NOW + 30)
    assert log.offset_for_timestamp(NOW + 30) == (1, NOW + 30)
    assert log.offset_for_timestamp(NOW + 31) == (4, NOW + 40)
    assert log.offset_for_timestamp(NOW + 41) is None
    assert log.max_timestamp() == (4, NOW + 40)


def test_offset_for_timestamp_across_segments_and_reopen(directory: Path) -> None:
    log = open_log(directory, segment_bytes=200, index_interval_bytes=50)
    for i in range(30):
        append(log, make_batch([NOW + i * 10, NOW + i * 10 + 5]))
    assert log.segment_count > 5
    for reopen in (False, True):
        if reopen:
            log.close()
            log = open_log(directory, segment_bytes=200, index_interval_bytes=50)
            assert not log.recovered_by_scan
        for i in range(30):
            assert log.offset_for_timestamp(NOW + i * 10) == (2 * i, NOW + i * 10)
            assert log.offset_for_timestamp(NOW + i * 10 + 1) == (2 * i + 1, NOW + i * 10 + 5)
        assert log.offset_for_timestamp(NOW + 1000) is None
        assert log.max_timestamp() == (59, NOW + 295)


def test_offset_for_timestamp_in_a_gzip_batch(directory: Path) -> None:
    log = open_log(directory)
    append(log, make_batch([NOW]))
    append(log, make_batch([NOW + 5, NOW + 50, NOW + 7], compression=GZIP, compress=gzip.compress))
    assert log.offset_for_timestamp(NOW + 1) == (1, NOW + 5)
    assert log.offset_for_timestamp(NOW + 6) == (2, NOW + 50)
    assert log.offset_for_timestamp(NOW + 51) is None
    assert log.max_timestamp() == (2, NOW + 50)


def _codec(name: str) -> tuple[int, Callable[[bytes], bytes]]:
    if name == "lz4":
        lz4_frame = pytest.importorskip("lz4.frame")
        return LZ4, lz4_frame.compress
    if name == "zstd":
        zstandard = pytest.importorskip("zstandard")
        return ZSTD, lambda data: zstandard.ZstdCompressor().compress(data)
    if name == "snappy-raw":
        snappy = pytest.importorskip("snappy")
        return SNAPPY, snappy.compress
    snappy = pytest.importorskip("snappy")

    def xerial(data: bytes) -> bytes:
        block = snappy.compress(data)
        head = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
        return head + struct.pack(">i", len(block)) + block

    return SNAPPY, xerial


@pytest.mark.parametrize("codec", ["lz4", "zstd", "snappy-raw", "snappy-xerial"])
def test_offset_for_timestamp_in_other_codecs(directory: Path, codec: str) -> None:
    attributes, compress = _codec(codec)
    log = open_log(directory)
    stamps = [NOW, NOW + 5, NOW + 50, NOW + 7]
    append(log, make_batch(stamps, compression=attributes, compress=compress))
    assert log.offset_for_timestamp(NOW + 3) == (1, NOW + 5)
    assert log.offset_for_timestamp(NOW + 6) == (2, NOW + 50)
    assert log.max_timestamp() == (2, NOW + 50)


def test_undecodable_batch_answers_its_base_offset(directory: Path) -> None:
    log = open_log(directory)
    append(log, make_batch([NOW, NOW + 50], compression=GZIP, compress=lambda b: b"junk" + b))
    assert log.offset_for_timestamp(NOW + 1) == (0, NOW + 50)


def test_max_timestamp_of_an_empty_log(directory: Path) -> None:
    assert open_log(directory).max_timestamp() is None
    assert open_log(directory).offset_for_timestamp(0) is None


# -- leader epochs ------------------------------------------------------------------------


def test_leader_epochs_are_stamped_checkpointed_and_answered(directory: Path) -> None:
    log = open_log(directory)
    assert log.latest_epoch == -1
    assert log.end_offset_for_epoch(0) == (-1, -1)
    append(log, batch_of(5), epoch=0)
    append(log, batch_of(3), epoch=2)
    append(log, batch_of(1), epoch=2)
    append(log, batch_of(2), epoch=3)
    assert [h.partition_leader_epoch for h in headers_of(log.read(0, 1 << 20))] == [0, 2, 2, 3]
    assert (directory / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n3\n0 0\n2 5\n3 9\n"
    assert log.latest_epoch == 3
    assert log.end_offset_for_epoch(0) == (0, 5)
    assert log.end_offset_for_epoch(1) == (0, 5)
    assert log.end_offset_for_epoch(2) == (2, 9)
    assert log.end_offset_for_epoch(3) == (3, 11)
    assert log.end_offset_for_epoch(4) == (-1, -1)
    assert log.end_offset_for_epoch(-1) == (-1, -1)
    log.close()
    log = open_log(directory)
    assert log.end_offset_for_epoch(2) == (2, 9)
    assert log.latest_epoch == 3


def test_epochs_of_truncated_data_are_forgotten(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(2), epoch=0)
    append(log, batch_of(2), epoch=1)
    del log
    segment = directory / "00000000000000000000.log"
    os.truncate(segment, segment.stat().st_size - 3)
    log = open_log(directory)
    assert log.log_end_offset == 2
    assert log.latest_epoch == 0
    assert (directory / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"


def test_epochs_requested_below_the_first_known_one(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(2), epoch=4)
    append(log, batch_of(2), epoch=6)
    assert log.end_offset_for_epoch(1) == (1, 0)
    assert log.end_offset_for_epoch(5) == (4, 2)


# -- clean shutdown and recovery ------------------------------------------------------------


def _fill(log: PartitionLog, batches: int = 12) -> list[bytes]:
    out = []
    for i in range(batches):
        batch = batch_of(1 + i % 3, size=50)
        append(log, batch, now=NOW + i)
        out.append(log.read(log.log_end_offset - 1, 1 << 20).read())  # type: ignore[union-attr]
    return out


def test_clean_close_then_reopen_does_not_scan(directory: Path) -> None:
    log = open_log(directory, segment_bytes=300)
    stored = _fill(log)
    end = log.log_end_offset
    log.close()
    assert (directory / CLEAN_SHUTDOWN).exists()
    with pytest.raises(ValueError):
        log.read(0, 100)
    log = open_log(directory, segment_bytes=300)
    assert not log.recovered_by_scan and log.scanned_segments == 0
    assert log.log_end_offset == end
    assert [data for _, data in log.iter_batches()] == stored
    # the marker goes at the first change, and comes back at the next close
    assert (directory / CLEAN_SHUTDOWN).exists()
    append(log, batch_of(1))
    assert not (directory / CLEAN_SHUTDOWN).exists()
    log.close()
    log = open_log(directory, segment_bytes=300)
    assert not log.recovered_by_scan
    assert log.log_end_offset == end + 1


def test_reopen_without_close_scans(directory: Path) -> None:
    log = open_log(directory, segment_bytes=300)
    stored = _fill(log)
    log = open_log(directory, segment_bytes=300)
    assert log.recovered_by_scan
    assert [data for _, data in log.iter_batches()] == stored
    assert append(log, batch_of(1)).first_offset == 24


def test_a_flushed_log_rescans_only_from_the_recovery_point(directory: Path) -> None:
    log = open_log(directory, segment_bytes=300)
    _fill(log)
    assert log.segment_count > 3
    log.flush()
    append(log, batch_of(1))
    log = open_log(directory, segment_bytes=300)
    assert log.recovered_by_scan and log.scanned_segments == 1


def test_a_stale_marker_is_not_trusted(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(2))
    log.close()
    log = open_log(directory)
    with open(directory / "00000000000000000000.log", "ab") as out:  # as if the unlink was lost
        out.write(batch_of(1)[:30])
    log = open_log(directory)
    assert log.recovered_by_scan and log.log_end_offset == 2


def test_recovery_truncates_a_torn_tail(directory: Path) -> None:
    log = open_log(directory)
    stored = _fill(log, 5)
    good = log.size_bytes()
    with open(directory / "00000000000000000000.log", "ab") as out:
        out.write(batch_of(3)[:40])
    log = open_log(directory)
    assert log.recovered_by_scan
    assert log.size_bytes() == good
    assert [data for _, data in log.iter_batches()] == stored
    # cut in the middle of the last good batch
    end = log.log_end_offset
    last = stored[-1]
    os.truncate(directory / "00000000000000000000.log", good - len(last) // 2)
    log = open_log(directory)
    assert log.log_end_offset == end - read_header(last).records_count
    assert append(log, batch_of(1)).first_offset == log.log_end_offset - 1


def test_recovery_truncates_at_a_crc_mismatch_and_drops_later_segments(directory: Path) -> None:
    log = open_log(directory, segment_bytes=300)
    stored = _fill(log)
    names = sorted(directory.glob("*.log"))
    assert len(names) >= 3
    victim = names[1]
    data = bytearray(victim.read_bytes())
    data[HEADER_SIZE + 5] ^= 0xFF  # inside the first batch of the second segment
    victim.write_bytes(bytes(data))
    log = open_log(directory, segment_bytes=300)
    assert log.recovered_by_scan
    base = int(victim.name[:20])
    assert log.log_end_offset == base
    assert victim.stat().st_size == 0
    assert sorted(directory.glob("*.log")) == names[:2]
    kept = [d for d in stored if read_header(d).base_offset < base]
    assert [d for _, d in log.iter_batches()] == kept
    assert append(log, batch_of(1)).first_offset == base


def test_garbled_last_batch_is_cut(directory: Path) -> None:
    log = open_log(directory)
    stored = _fill(log, 4)
    path = directory / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x55
    path.write_bytes(bytes(data))
    log = open_log(directory)
    assert [d for _, d in log.iter_batches()] == stored[:-1]


@pytest.mark.parametrize("damage", ["garbage", "missing", "truncated", "empty"])
@pytest.mark.parametrize("clean", [True, False])
def test_damaged_index_files_are_rebuilt(directory: Path, damage: str, clean: bool) -> None:
    settings = {"segment_bytes": 2000, "index_interval_bytes": 64}
    log = open_log(directory, **settings)
    for i in range(40):
        append(log, make_batch([NOW + i * 10, NOW + i * 10 + 1]), now=NOW)
    expected = [(h.base_offset, d) for h, d in log.iter_batches()]
    if clean:
        log.close()
    first = directory / "00000000000000000000"
    for suffix in (".index", ".timeindex"):
        path = first.with_suffix(suffix)
        assert path.exists()
        if damage == "garbage":
            path.write_bytes(os.urandom(path.stat().st_size + 5))
        elif damage == "missing":
            path.unlink()
        elif damage == "truncated":
            path.write_bytes(path.read_bytes()[:-3])
        else:
            path.write_bytes(b"")
    log = open_log(directory, **settings)
    assert log.recovered_by_scan is not clean
    for offset, data in expected:
        piece = log.read(offset + 1, 1)
        assert piece is not None and piece.read() == data
    for i in range(40):
        assert log.offset_for_timestamp(NOW + i * 10 + 1) == (2 * i + 1, NOW + i * 10 + 1)
    assert first.with_suffix(".index").stat().st_size > 0


def test_a_plausible_but_wrong_index_is_detected(directory: Path) -> None:
    log = open_log(directory, segment_bytes=2000, index_interval_bytes=64)
    for _ in range(40):
        append(log, batch_of(1, size=30))
    log.close()
    index = directory / "00000000000000000000.index"
    entries = bytearray(index.read_bytes())
    struct.pack_into(">i", entries, len(entries) - 8, struct.unpack_from(">i", entries, -8)[0] + 1)
    index.write_bytes(bytes(entries))
    log = open_log(directory, segment_bytes=2000, index_interval_bytes=64)
    for offset in range(40):
        assert headers_of(log.read(offset, 1))[0].base_offset == offset


def test_garbled_epoch_checkpoint_is_rebuilt(directory: Path) -> None:
    log = open_log(directory, segment_bytes=300)
    for epoch in range(4):
        append(log, batch_of(5, size=40), epoch=epoch)
        append(log, batch_of(5, size=40), epoch=epoch)
    log.close()
    (directory / LEADER_EPOCH_CHECKPOINT).write_text("0\nnonsense\n")
    log = open_log(directory, segment_bytes=300)
    assert log.leader_epochs == [(0, 0), (1, 10), (2, 20), (3, 30)]


def test_new_and_reopened_empty_logs(directory: Path) -> None:
    log = open_log(directory)
    assert not log.recovered_by_scan
    log.close()
    log = open_log(directory)
    assert not log.recovered_by_scan and log.log_end_offset == 0
    log = open_log(directory)  # after a "crash" of an empty log
    assert log.log_end_offset == 0
    assert append(log, batch_of(1)).first_offset == 0


def test_many_clean_logs_open_fast(tmp_path: Path) -> None:
    paths = [tmp_path / f"t-{i}" for i in range(200)]
    for path in paths:
        log = open_log(path)
        append(log, batch_of(3))
        log.close()
    start = time.perf_counter()
    logs = [open_log(path) for path in paths]
    elapsed = time.perf_counter() - start
    assert not any(log.recovered_by_scan for log in logs)
    assert elapsed < 1.0, elapsed
    start = time.perf_counter()
    for log in logs:
        log.close()
    assert time.perf_counter() - start < 1.0


# -- flushing -----------------------------------------------------------------------------


def test_flush_policy_and_recovery_point(directory: Path) -> None:
    log = open_log(directory, flush_messages=3)
    append(log, batch_of(2))
    assert not log.needs_flush(NOW) and not log.flush_policy_due(NOW)
    append(log, batch_of(1))
    assert log.needs_flush(NOW) and log.flush_policy_due(NOW)
    log.flush()
    assert not log.needs_flush(NOW) and log.recovery_point == 3
    log.update_config(LogConfig(flush_ms=1000))
    append(log, batch_of(1))
    assert not log.needs_flush(int(time.time() * 1000))
    assert log.needs_flush(int(time.time() * 1000) + 1000)


def test_rolled_segments_ask_for_a_background_flush(directory: Path) -> None:
    log = open_log(directory, segment_bytes=100)
    append(log, batch_of(1, size=60))
    assert not log.needs_flush(NOW)
    append(log, batch_of(1, size=60))
    assert log.needs_flush(NOW)
    assert not log.flush_policy_due(NOW)  # writers do not wait for a rolled segment's fsync
    log.flush()
    assert not log.needs_flush(NOW)


def test_flush_from_a_thread_while_appending(directory: Path) -> None:
    log = open_log(directory, segment_bytes=2000, flush_messages=1, retention_bytes=6000)
    stop = threading.Event()
    errors: list[BaseException] = []

    def flusher() -> None:
        while not stop.is_set():
            try:
                log.flush()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for i in range(300):
            append(log, batch_of(1, size=50))
            if i % 20 == 0:
                log.apply_retention(NOW)
    finally:
        stop.set()
        thread.join()
    assert not errors
    log.flush()
    assert log.recovery_point == 300
    log.close()
    log = open_log(directory)
    assert not log.recovered_by_scan and log.log_end_offset == 300


def test_delete_removes_the_directory(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(1))
    log.delete()
    assert not directory.exists()


# -- config -------------------------------------------------------------------------------


def test_config_from_topic_configs() -> None:
    base = LogConfig()
    config = LogConfig.from_topic_configs(
        {
            "segment.bytes": "1024",
            "retention.ms": "-1",
            "cleanup.policy": "delete,compact",
            "message.timestamp.type": "LogAppendTime",
            "flush.messages": "1",
            "flush.ms": str(2**63 - 1),
            "unknown.name": "whatever",
        },
        base,
    )
    assert config.segment_bytes == 1024
    assert config.retention_ms == -1
    assert config.cleanup_policy == "compact,delete"
    assert config.message_timestamp_type == "LogAppendTime"
    assert config.flush_messages == 1 and config.flush_ms is None
    assert config.segment_ms == base.segment_ms
    for bad in (
        {"segment.bytes": "ten"},
        {"segment.bytes": "0"},
        {"retention.ms": "-2"},
        {"cleanup.policy": "keep"},
        {"message.timestamp.type": "Now"},
        {"min.insync.replicas": "0"},
    ):
        with pytest.raises(ValueError):
            LogConfig.from_topic_configs(bad, base)
    assert LogConfig.from_topic_configs(config.to_topic_configs(), base) == config


def test_append_as_is_keeps_gaps_and_reads_into_them(directory: Path) -> None:
    log = open_log(directory, index_interval_bytes=0)
    append(log, batch_of(2))
    first = build_batch([(None, b"a")], base_offset=2)
    later = build_batch([(None, b"b")] * 2, base_offset=7)
    data = first + later
    log.append_as_is(data, list(iter_batches(data)), now_ms=NOW)
    assert log.log_end_offset == 9
    assert [h.base_offset for h in headers_of(log.read(4, 1 << 20))] == [7]
    log.close()
    log = open_log(directory)
    assert log.log_end_offset == 9
    assert [h.base_offset for h, _ in log.iter_batches(3)] == [7]


def test_reopen_after_a_crash_keeps_the_data_of_flushed_and_rolled_segments(
    directory: Path,
) -> None:
    log = open_log(directory, segment_bytes=500)
    stored = _fill(log, 30)
    log.flush()
    stored += _fill(log, 10)
    log = open_log(directory, segment_bytes=500)
    assert log.recovered_by_scan
    assert log.needs_flush(NOW)  # the scanned segments were not fsynced by anyone yet
    assert [d for _, d in log.iter_batches()] == stored
    log.flush()
    assert log.recovery_point == log.log_end_offset
    log = open_log(directory, segment_bytes=500)
    assert log.scanned_segments == 1


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 300), min_size=1, max_size=25),
    where=st.floats(0, 1, exclude_max=True),
    garble=st.booleans(),
)
def test_recovery_keeps_exactly_the_whole_batches_before_the_damage(
    tmp_path: Path, sizes: list[int], where: float, garble: bool
) -> None:
    directory = tmp_path / f"t-{time.perf_counter_ns()}"
    log = open_log(directory, segment_bytes=1500, index_interval_bytes=100)
    stored = []
    for size in sizes:
        append(log, batch_of(1 + size % 4, size=size))
        stored.append(log.read(log.log_end_offset - 1, 1 << 20).read())  # type: ignore[union-attr]
    active = sorted(directory.glob("*.log"))[-1]
    base = int(active.name[:20])
    earlier = [d for d in stored if read_header(d).base_offset < base]
    in_active = [d for d in stored if read_header(d).base_offset >= base]
    point = int(active.stat().st_size * where)
    starts = [sum(len(d) for d in in_active[:i]) for i in range(len(in_active))]
    if garble:
        # flip a byte the CRC covers, in the batch holding `point`
        k = max(i for i, start in enumerate(starts) if start <= point)
        byte = starts[k] + 21 + (point - starts[k]) % (len(in_active[k]) - 21)
        data = bytearray(active.read_bytes())
        data[byte] ^= 0xFF
        active.write_bytes(bytes(data))
        kept = earlier + in_active[:k]
    else:
        os.truncate(active, point)
        kept = earlier + [d for d, s in zip(in_active, starts, strict=True) if s + len(d) <= point]
    log = open_log(directory, segment_bytes=1500, index_interval_bytes=100)
    assert [d for _, d in log.iter_batches()] == kept
    assert log.log_end_offset == (read_header(kept[-1]).next_offset if kept else 0)
    for data in kept:
        header = read_header(data)
        assert headers_of(log.read(header.last_offset, 1))[0].base_offset == header.base_offset
    assert append(log, batch_of(1)).first_offset == log.log_end_offset - 1


def _model_read(
    batches: list[BatchHeader], offset: int, max_bytes: int, max_offset: int | None, min_one: bool
) -> list[int]:
    """Base offsets read() must return, from a plain list of (segment, header) facts."""
    first = next(h for h in batches if h.next_offset > offset)
    if max_offset is not None and first.base_offset >= max_offset:
        return []
    if first.size > max_bytes:
        return [first.base_offset] if min_one else []
    out, total = [], 0
    for h in batches:
        if h.base_offset < first.base_offset:
            continue
        if h.position == 0 and out:  # a new segment
            break
        if total + h.size > max_bytes or (max_offset is not None and h.base_offset >= max_offset):
            break
        out.append(h.base_offset)
        total += h.size
    return out


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.tuples(st.integers(1, 5), st.integers(0, 400)), min_size=1, max_size=40),
    interval=st.sampled_from([0, 1, 100, 1000, 4096]),
    segment_bytes=st.sampled_from([300, 2000, 1 << 20]),
    reads=st.lists(
        st.tuples(
            st.floats(0, 1, exclude_max=True),
            st.integers(0, 3000),
            st.one_of(st.none(), st.floats(0, 1)),
            st.booleans(),
        ),
        min_size=1,
        max_size=20,
    ),
    reopen=st.booleans(),
)
def test_reads_match_a_model(
    tmp_path: Path,
    sizes: list[tuple[int, int]],
    interval: int,
    segment_bytes: int,
    reads: list[tuple[float, int, float | None, bool]],
    reopen: bool,
) -> None:
    directory = tmp_path / f"t-{time.perf_counter_ns()}"
    log = open_log(directory, segment_bytes=segment_bytes, index_interval_bytes=interval)
    for count, size in sizes:
        append(log, batch_of(count, size=size))
    if reopen:
        log.close()
        log = open_log(directory, segment_bytes=segment_bytes, index_interval_bytes=interval)
    batches = []
    for path in sorted(directory.glob("*.log")):
        batches.extend(iter_batches(path.read_bytes()))
    end = log.log_end_offset
    for where, max_bytes, limit, min_one in reads:
        offset = int(end * where)
        max_offset = None if limit is None else int(end * limit)
        piece = log.read(offset, max_bytes, max_offset=max_offset, min_one=min_one)
        got = [] if piece is None else [h.base_offset for h in iter_batches(piece.read())]
        assert got == _model_read(batches, offset, max_bytes, max_offset, min_one)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=st.lists(
        st.tuples(st.lists(st.integers(0, 1000), min_size=1, max_size=6), st.booleans()),
        min_size=1,
        max_size=30,
    ),
    interval=st.sampled_from([0, 50, 4096]),
    segment_bytes=st.sampled_from([250, 1000, 1 << 20]),
    start=st.floats(0, 1),
    reopen=st.booleans(),
)
def test_timestamps_match_a_model(
    tmp_path: Path,
    batches: list[tuple[list[int], bool]],
    interval: int,
    segment_bytes: int,
    start: float,
    reopen: bool,
) -> None:
    directory = tmp_path / f"t-{time.perf_counter_ns()}"
    settings = {"segment_bytes": segment_bytes, "index_interval_bytes": interval}
    log = open_log(directory, **settings)
    records = []
    for stamps, compressed in batches:
        stamps = [NOW + s for s in stamps]
        codec = {"compression": GZIP, "compress": gzip.compress} if compressed else {}
        info = append(log, make_batch(stamps, **codec))  # type: ignore[arg-type]
        records += [(info.first_offset + i, s) for i, s in enumerate(stamps)]
    log.delete_records_before(int(log.log_end_offset * start))
    if reopen:
        log.close()
        log = open_log(directory, **settings)
    live = [(o, s) for o, s in records if o >= log.log_start_offset]
    for target in range(NOW - 1, NOW + 1002, 7):
        expected = next(((o, s) for o, s in live if s >= target), None)
        assert log.offset_for_timestamp(target) == expected
    if live:
        top = max(s for _, s in live)
        assert log.max_timestamp() == next((o, s) for o, s in live if s == top)
    else:
        assert log.max_timestamp() is None


# -- truncation (a follower whose log diverged from its leader's) ------------------------


def test_truncate_to_cuts_at_a_batch_boundary_across_segments(directory: Path) -> None:
    batch = batch_of(2, size=100)
    log = open_log(directory, segment_bytes=len(batch) * 2)
    for epoch in (0, 0, 1, 1, 2):
        append(log, batch, epoch=epoch)  # offsets 0-9 over segments at 0, 4, 8
    assert sorted(p.name for p in directory.glob("*.log"))[-1] == f"{8:020d}.log"
    assert log.truncate_to(5) == 4  # offset 5 is inside the batch 4-5: it goes whole
    assert log.log_end_offset == 4
    assert not (directory / f"{8:020d}.log").exists()
    assert log.latest_epoch == 0
    assert log.end_offset_for_epoch(0) == (0, 4)
    assert headers_of(log.read(2, 1 << 20))[-1].base_offset == 2
    assert log.read(4, 1 << 20) is None
    info = append(log, batch_of(1), epoch=3)
    assert info.first_offset == 4
    log.close()
    log = open_log(directory)
    assert log.log_end_offset == 5
    assert [h.partition_leader_epoch for h in headers_of(log.read(4, 1 << 20))] == [3]
    assert log.end_offset_for_epoch(1) == (0, 4)


def test_truncate_to_survives_a_crash_and_past_the_end_does_nothing(directory: Path) -> None:
    log = open_log(directory)
    for _ in range(4):
        append(log, batch_of(3))
    log.flush()
    assert log.truncate_to(20) == 12
    assert log.truncate_to(6) == 6
    del log  # no clean shutdown
    log = open_log(directory)
    assert log.log_end_offset == 6
    assert [h.base_offset for h in headers_of(log.read(0, 1 << 20))] == [0, 3]


def test_truncate_to_the_log_start_empties_the_log(directory: Path) -> None:
    log = open_log(directory)
    append(log, batch_of(3), epoch=1)
    append(log, batch_of(3), epoch=1)
    log.delete_records_before(3)
    assert log.truncate_to(3) == 3
    assert (log.log_start_offset, log.log_end_offset, log.latest_epoch) == (3, 3, -1)
    assert append(log, batch_of(1), epoch=2).first_offset == 3
    log.close()
    log = open_log(directory)
    assert (log.log_start_offset, log.log_end_offset) == (3, 4)
