"""Where the finalized feature levels live: `features.json` in the data directory of a
node of its own; in a cluster, a document of the controller's metadata log that every
broker follows (adopt), keeping a copy in the same file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from odradek.broker.settings.features import INITIAL, FinalizedFeatures
from odradek.storage.document_file import DocumentFile

FILE_NAME = "features.json"


class FeaturesFileError(RuntimeError):
    """The features file exists but cannot be read; the message names it."""


class FeatureStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.finalized = INITIAL
        self._file = DocumentFile(
            self.path,
            "feature levels",
            FinalizedFeatures.encode,
            FinalizedFeatures.decode,
            FeaturesFileError,
        )

    def load(self) -> None:
        finalized = self._file.read()
        if finalized is not None:
            self.finalized = finalized

    async def change(self, levels: Mapping[str, int]) -> None:
        """Finalize `levels` under the next epoch; returns once the file is durable.
        Raises OSError (nothing changed) if it cannot be written."""
        async with self._file.lock:
            new = FinalizedFeatures(dict(levels), self.finalized.epoch + 1)
            await self._file.write(new)
            self.finalized = new

    def adopt(self, document: bytes) -> None:
        """The levels the cluster's metadata has, kept in the file too."""
        new = self._file.adopted(document, self.finalized)
        if new is not None:
            self.finalized = new
