"""Where the finalized feature levels live: `features.json` in the data directory of a
node of its own; in a cluster, a document of the controller's metadata log that every
broker follows (adopt), keeping a copy in the same file."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from odradek.broker.settings.features import INITIAL, FinalizedFeatures
from odradek.storage.checkpoint import write_atomic

FILE_NAME = "features.json"


class FeaturesFileError(RuntimeError):
    """The features file exists but cannot be read; the message names it."""


class FeatureStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.finalized = INITIAL
        self._write_lock = asyncio.Lock()

    def load(self) -> None:
        if not self.path.exists():
            return
        try:
            self.finalized = FinalizedFeatures.decode(self.path.read_bytes())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise FeaturesFileError(f"cannot read feature levels {self.path}: {exc}") from None

    async def change(self, levels: Mapping[str, int]) -> None:
        """Finalize `levels` under the next epoch; returns once the file is durable.
        Raises OSError (nothing changed) if it cannot be written."""
        async with self._write_lock:
            new = FinalizedFeatures(dict(levels), self.finalized.epoch + 1)
            await asyncio.to_thread(write_atomic, self.path, new.encode().decode())
            self.finalized = new

    def adopt(self, document: bytes) -> None:
        """The levels the cluster's metadata has, kept in the file too."""
        new = FinalizedFeatures.decode(document)
        if new != self.finalized:
            write_atomic(self.path, document.decode())
            self.finalized = new
