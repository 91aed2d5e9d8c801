"""What a follower (or an observer) does to its copy of the metadata log with what the
leader sends: records appended as the leader numbered them, a log cut back where the
two logs part, or a log that starts over after the leader's snapshot. The voter sets
the records carry go into the voter history as they come."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from odradek.broker.cluster.quorum import snapshots
from odradek.broker.cluster.quorum.rules import LogEnd
from odradek.broker.cluster.quorum.snapshots import SnapshotId
from odradek.broker.cluster.quorum.voters import VoterHistory, snapshot_control_records
from odradek.protocol.batch import iter_batches

if TYPE_CHECKING:
    from odradek.storage.log import PartitionLog

log = structlog.get_logger("controller")


def log_end(plog: PartitionLog) -> LogEnd:
    """The epoch of the log's last record and its end offset."""
    epoch = plog.latest_epoch
    if plog.log_end_offset == plog.log_start_offset > 0:
        # nothing after the snapshot the log starts from: its epoch is the last one
        held = snapshots.latest(Path(plog.directory))
        if held is not None and held.end_offset == plog.log_end_offset:
            epoch = held.epoch
    return LogEnd(epoch, plog.log_end_offset)


def cut_back(plog: PartitionLog, history: VoterHistory, to: int, high_watermark: int) -> None:
    """The leader's log parts from this one at `to`: drop what follows (never below
    the high watermark, which is committed)."""
    target = max(min(to, plog.log_end_offset), high_watermark)
    removed = plog.truncate_to(target)
    history.truncate(plog.log_end_offset)
    log.warning("cut the metadata log back to the leader's", to=target, removed=removed)


def append(plog: PartitionLog, history: VoterHistory, records: Any) -> tuple[bool, bool]:
    """Append the batches of a fetch answer this log does not hold yet: (anything
    appended, the voters changed)."""
    records = memoryview(records or b"")
    headers = [h for h in iter_batches(records) if h.base_offset >= plog.log_end_offset]
    if not headers:
        return False, False
    first = headers[0].position
    data = records[first : headers[-1].position + headers[-1].size]
    plog.append_as_is(data, [h._replace(position=h.position - first) for h in headers], gaps=True)
    changed = any(h.is_control for h in headers) and history.take(data)
    return True, changed


def start_after(
    plog: PartitionLog, history: VoterHistory, snapshot: SnapshotId, data: bytes
) -> None:
    """Keep the leader's snapshot; the log starts over where it ends."""
    snapshots.store(Path(plog.directory), snapshot, data)
    plog.start_over_at(snapshot.end_offset)
    history.restart_at(snapshot.end_offset, snapshot_control_records(data))
    log.info("metadata log follows the leader's snapshot", end_offset=snapshot.end_offset)
