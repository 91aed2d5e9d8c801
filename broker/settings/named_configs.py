"""Configs set on named resources (groups, client-metrics subscriptions), kept whole in
one JSON file of the data directory as {resource name: {config name: value}}."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from odradek.storage.document_file import DocumentFile


class NamedConfigs:
    def __init__(self, path: Path, what: str, error: type[Exception]) -> None:
        """`what` names the file's contents in the message of `error`, raised by load
        when the file exists but cannot be read."""
        self.path = path
        self.configs: dict[str, dict[str, str]] = {}
        self._file: DocumentFile[dict[str, dict[str, str]]] = DocumentFile(
            path, what, _encode, json.loads, error
        )

    def load(self) -> None:
        configs = self._file.read()
        if configs is not None:
            self.configs = configs

    def adopt(self, document: bytes) -> None:
        """The configs as a cluster's metadata has them, kept in the file too."""
        configs = self._file.adopted(document, self.configs)
        if configs is not None:
            self.configs = configs

    def of(self, name: str) -> dict[str, str]:
        return dict(self.configs.get(name, {}))

    def replace(self, name: str, configs: Mapping[str, str]) -> None:
        """Set the resource's configs to exactly `configs` (validated before); none left
        removes it. Raises OSError (nothing changed) if the file cannot be written."""
        after = dict(self.configs)
        if configs:
            after[name] = dict(configs)
        else:
            after.pop(name, None)
        self._file.save(after)
        self.configs = after


def _encode(configs: dict[str, dict[str, str]]) -> bytes:
    return json.dumps(configs, indent=1, sort_keys=True).encode()


def with_configs(document: bytes | None, name: str, configs: Mapping[str, str]) -> bytes:
    """The document of every resource's configs, with `name`'s replaced by `configs`
    (none: the resource removed)."""
    every: dict[str, dict[str, str]] = json.loads(document) if document else {}
    if configs:
        every[name] = dict(configs)
    else:
        every.pop(name, None)
    return _encode(every)
