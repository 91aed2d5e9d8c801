"""A value kept as one document in a file, rewritten whole on every change.

The file is replaced atomically (storage.checkpoint.write_atomic), so a crash leaves
either the old document or the new one. Its owner holds `lock` from reading the value
in use to putting the new one in use, and puts it in use only once `write` returned:
a write that fails (OSError) leaves both the file and the value in use as they were.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from odradek.storage.checkpoint import write_atomic

T = TypeVar("T")


class DocumentFile(Generic[T]):
    def __init__(
        self,
        path: Path,
        name: str,
        encode: Callable[[T], bytes],
        decode: Callable[[bytes], T],
        error: type[Exception],
    ) -> None:
        """`name` says what the file holds ("delegation tokens") in the message of
        `error`, raised when the file exists but cannot be read."""
        self.path = path
        self.name = name
        self.encode = encode
        self.decode = decode
        self.error = error
        self.lock = asyncio.Lock()

    def read(self) -> T | None:
        """The value the file holds; None when there is no file."""
        if not self.path.exists():
            return None
        try:
            return self.decode(self.path.read_bytes())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise self.error(f"cannot read {self.name} {self.path}: {exc}") from None

    def save(self, value: T) -> None:
        """Write `value` durably, blocking until it is; raises OSError if it cannot."""
        write_atomic(self.path, self.encode(value).decode())

    async def write(self, value: T) -> None:
        """`save` in a worker thread, so the event loop goes on meanwhile."""
        await asyncio.to_thread(self.save, value)

    def adopted(self, document: bytes, current: T) -> T | None:
        """The value of `document`, written to the file as it is, when it differs from
        `current`; None when it does not (the file is left alone)."""
        value = self.decode(document)
        if value == current:
            return None
        write_atomic(self.path, document.decode())
        return value
