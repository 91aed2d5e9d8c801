"""`replication-offset-checkpoint` in the data directory: the high watermark of every
partition this node has a replica of, as Kafka's file of that name (version 0, a
count, then "topic partition offset" lines). Written every few seconds and at a clean
stop, so that a restarted replica starts from what the cluster had committed rather
than from its log start (its consumers would wait for the followers otherwise)."""

from __future__ import annotations

import threading
from pathlib import Path

from odradek.storage.checkpoint import read_lines, write_atomic

FILE_NAME = "replication-offset-checkpoint"
INTERVAL_S = 5.0  # Kafka's replica.high.watermark.checkpoint.interval.ms

Checkpoint = dict[tuple[str, int], int]
_writing = threading.Lock()  # a write in a thread and the one at a clean stop


def read(data_dir: Path) -> Checkpoint:
    """The file's high watermarks; nothing when it is missing or unreadable."""
    lines = read_lines(data_dir / FILE_NAME)
    found: Checkpoint = {}
    if not lines:
        return found
    for line in lines[1:]:
        parts = line.split()
        if len(parts) != 3:
            return {}
        try:
            found[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            return {}
    return found


def write(data_dir: Path, high_watermarks: Checkpoint) -> None:
    entries = [f"{t} {p} {offset}" for (t, p), offset in sorted(high_watermarks.items())]
    with _writing:
        write_atomic(data_dir / FILE_NAME, "\n".join(["0", str(len(entries)), *entries, ""]))
