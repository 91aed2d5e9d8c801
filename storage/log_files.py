"""What storage/log.py and the modules it hands work to share: the names of the
files in a partition directory, and the one error the log raises for offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.storage.segment import Segment

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
CLEAN_SHUTDOWN = "clean-shutdown"


class OffsetOutOfRange(Exception):
    """The offset is below the log start offset or above the log end offset."""


def segment_base(segment: Segment) -> int:
    """The sort key of a log's segments (bisect by offset)."""
    return segment.base_offset
