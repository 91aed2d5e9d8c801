"""Snapshots of the metadata log, as Kafka's KRaft keeps them beside the log in
`__cluster_metadata-0`: `<end offset>-<epoch>.checkpoint`, a file of record batches
that starts with a SnapshotHeader control record, holds the whole state as metadata
records (coordinator/cluster/snapshot.py), and ends with a SnapshotFooter.

The end offset is the first offset the snapshot does not hold; the epoch is the
leader epoch of the last record it does. A file is written beside its final name and
renamed once synced, so a crash leaves either the whole snapshot or none.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord
from kio.serial import entity_writer
from kio.static.primitive import i16, i64

from odradek.broker.cluster.quorum.requests import METADATA_TOPIC
from odradek.coordinator.runtime import Record
from odradek.protocol.batch import ATTR_CONTROL, build_batch, iter_batches, iter_records
from odradek.protocol.errors import ErrorCode

SUFFIX = ".checkpoint"
SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 3, 4  # control record types, after LeaderChange (2)
RECORDS_PER_BATCH = 1000
_write_header = entity_writer(SnapshotHeaderRecord)
_write_footer = entity_writer(SnapshotFooterRecord)


class SnapshotId(NamedTuple):
    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{SUFFIX}"


def listed(directory: Path) -> list[SnapshotId]:
    """The snapshots in `directory`, oldest first."""
    found = []
    for path in directory.glob(f"*{SUFFIX}"):
        offset, _, epoch = path.name.removesuffix(SUFFIX).partition("-")
        if offset.isdigit() and epoch.isdigit():
            found.append(SnapshotId(int(offset), int(epoch)))
    return sorted(found)


def latest(directory: Path) -> SnapshotId | None:
    snapshots = listed(directory)
    return snapshots[-1] if snapshots else None


def _control(kind: int, value: bytes, offset: int, epoch: int, now_ms: int) -> bytes:
    key = struct.pack(">hh", 0, kind)
    return build_batch(
        [(key, value)],
        base_offset=offset,
        timestamp=now_ms,
        attributes=ATTR_CONTROL,
        partition_leader_epoch=epoch,
    )


def encode(
    snapshot: SnapshotId,
    records: list[Record],
    last_ms: int,
    control: Sequence[Record] = (),
) -> bytes:
    """The snapshot file's bytes: header, the quorum's `control` records (its
    kraft.version and voters, as KRaft puts them there), records, footer, offsets
    from 0."""
    header = io.BytesIO()
    _write_header(
        header, SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(last_ms))
    )
    out = bytearray(_control(SNAPSHOT_HEADER, header.getvalue(), 0, snapshot.epoch, last_ms))
    offset = 1
    if control:
        out += build_batch(
            list(control),
            base_offset=offset,
            timestamp=last_ms,
            attributes=ATTR_CONTROL,
            partition_leader_epoch=snapshot.epoch,
        )
        offset += len(control)
    for start in range(0, len(records), RECORDS_PER_BATCH):
        chunk = records[start : start + RECORDS_PER_BATCH]
        out += build_batch(
            chunk, base_offset=offset, timestamp=last_ms, partition_leader_epoch=snapshot.epoch
        )
        offset += len(chunk)
    footer = io.BytesIO()
    _write_footer(footer, SnapshotFooterRecord(version=i16(0)))
    out += _control(SNAPSHOT_FOOTER, footer.getvalue(), offset, snapshot.epoch, last_ms)
    return bytes(out)


def write(
    directory: Path,
    snapshot: SnapshotId,
    records: list[Record],
    last_ms: int,
    control: Sequence[Record] = (),
) -> None:
    store(directory, snapshot, encode(snapshot, records, last_ms, control))


def read(directory: Path, snapshot: SnapshotId) -> Iterator[Record]:
    """The snapshot's metadata records (its control records left out)."""
    return records_of((directory / snapshot.file_name).read_bytes())


def size(directory: Path, snapshot: SnapshotId) -> int:
    return (directory / snapshot.file_name).stat().st_size


def chunk(directory: Path, snapshot: SnapshotId, position: int, max_bytes: int) -> bytes:
    """Up to `max_bytes` of the file from `position` (FetchSnapshot sends it so)."""
    with open(directory / snapshot.file_name, "rb") as f:
        f.seek(position)
        return f.read(max_bytes)


def remove_older(directory: Path, keep: SnapshotId) -> None:
    for snapshot in listed(directory):
        if snapshot < keep:
            (directory / snapshot.file_name).unlink(missing_ok=True)


FETCH_SNAPSHOT = 59
PIECE_BYTES = 4 * 1024 * 1024


class SnapshotUnavailable(Exception):
    pass


async def fetch(
    client: Any, cluster_id: str | None, replica_id: int, snapshot: SnapshotId
) -> bytes:
    """The whole of a snapshot from the quorum's leader, piece by piece (FetchSnapshot)."""
    whole = bytearray()
    while True:
        request = {
            "cluster_id": cluster_id,
            "replica_id": replica_id,
            "max_bytes": PIECE_BYTES,
            "topics": [
                {
                    "name": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "snapshot_id": {
                                "end_offset": snapshot.end_offset,
                                "epoch": snapshot.epoch,
                            },
                            "position": len(whole),
                        }
                    ],
                }
            ],
        }
        answer = await client.call(FETCH_SNAPSHOT, 1, request)
        if answer.error_code != ErrorCode.none:
            raise SnapshotUnavailable(f"FetchSnapshot: {answer.error_code.name}")
        piece = answer.topics[0].partitions[0]
        if piece.error_code != ErrorCode.none:
            raise SnapshotUnavailable(f"FetchSnapshot: {piece.error_code.name}")
        data = bytes(piece.unaligned_records or b"")
        whole += data
        if len(whole) >= piece.size:
            return bytes(whole[: piece.size])
        if not data:
            raise SnapshotUnavailable("FetchSnapshot: an empty piece before the end")


def records_of(data: bytes) -> Iterator[Record]:
    """The metadata records of a snapshot's bytes (its control records left out)."""
    for header in iter_batches(data):
        if header.is_control:
            continue
        body = data[header.position : header.position + header.size]
        for _delta, key, value in iter_records(body):
            yield key, value


def store(directory: Path, snapshot: SnapshotId, data: bytes) -> None:
    """A snapshot fetched from the leader, kept as the leader wrote it."""
    final = directory / snapshot.file_name
    partial = final.with_name(final.name + ".part")
    with open(partial, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    partial.replace(final)
