"""Leader epoch -> first offset written in it, as Kafka's leader-epoch-checkpoint."""

from __future__ import annotations

import bisect
from pathlib import Path

from odradek.storage.checkpoint import read_epochs, write_epochs

UNDEFINED = -1


class LeaderEpochCache:
    def __init__(self, path: Path, entries: list[tuple[int, int]]) -> None:
        self.path = path
        self._epochs = [epoch for epoch, _ in entries]
        self._starts = [start for _, start in entries]

    @classmethod
    def load(cls, path: Path) -> tuple[LeaderEpochCache, bool]:
        """The cache, and whether the file was readable (absent counts as readable)."""
        entries = read_epochs(path)
        if entries is None:
            return cls(path, []), not path.exists()
        return cls(path, entries), True

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED

    def assign(self, epoch: int, start_offset: int, *, persist: bool = True) -> bool:
        """Record that `epoch` starts at `start_offset`; False if it is not a new epoch."""
        if epoch < 0 or epoch <= self.latest_epoch:
            return False
        # A start below the latest entry's means those entries were never really written.
        while self._starts and self._starts[-1] >= start_offset:
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        if persist:
            self.save()
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget epochs that start at or after `end_offset` (the log was cut there)."""
        keep = bisect.bisect_left(self._starts, end_offset)
        if keep == len(self._starts):
            return False
        del self._epochs[keep:], self._starts[keep:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at `start_offset`: the epoch holding it starts there."""
        below = bisect.bisect_left(self._starts, start_offset)
        if below == 0:
            return False
        epoch = self._epochs[below - 1]
        del self._epochs[:below], self._starts[:below]
        if not self._starts or self._starts[0] > start_offset:
            self._epochs.insert(0, epoch)
            self._starts.insert(0, start_offset)
        return True

    def end_offset_for(
        self, epoch: int, log_end_offset: int, leader_epoch: int = UNDEFINED
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) by Kafka's rules.

        The latest epoch ends at the log end. Otherwise the answer is the start of
        the first later epoch, paired with the largest known epoch <= the one asked
        (or the one asked, when it is older than every known epoch). A leader's
        `leader_epoch` nothing was written in yet counts as starting at the log end,
        as Kafka notes it when the leader takes over.
        """
        epochs, starts = self._epochs, self._starts
        if leader_epoch > self.latest_epoch:
            epochs, starts = [*epochs, leader_epoch], [*starts, log_end_offset]
        if epoch == UNDEFINED or not epochs:
            return UNDEFINED, UNDEFINED
        if epoch == epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(epochs):
            return UNDEFINED, UNDEFINED
        if higher == 0:
            return epoch, starts[0]
        return epochs[higher - 1], starts[higher]

    def save(self, *, durable: bool = True) -> None:
        write_epochs(self.path, self.entries, durable=durable)
