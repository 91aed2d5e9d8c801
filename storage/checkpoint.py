"""Small text checkpoint files, replaced atomically.

Every file starts with a version line ("0"); readers answer None for a missing
or malformed file, so a torn checkpoint never stops a partition from opening.
"""

from __future__ import annotations

import os
from pathlib import Path

VERSION = "0"


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write `text` to a temporary file, fsync it, rename it over `path`.

    With durable=False the fsyncs are skipped: for files whose loss is harmless.
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, text.encode())
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_path(path: Path) -> None:
    """fsync a file by name; a file that is gone needs nothing."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_lines(path: Path) -> list[str] | None:
    """The lines after the version line, or None if missing or of another version."""
    try:
        text = path.read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if not lines or lines[0].strip() != VERSION:
        return None
    return lines[1:]


def read_offset(path: Path) -> int | None:
    lines = read_lines(path)
    if not lines:
        return None
    try:
        value = int(lines[0])
    except ValueError:
        return None
    return value if value >= 0 else None


def write_offset(path: Path, offset: int) -> None:
    write_atomic(path, f"{VERSION}\n{offset}\n")


def read_epochs(path: Path) -> list[tuple[int, int]] | None:
    """Kafka's leader-epoch-checkpoint: version, count, then "epoch start_offset" lines."""
    lines = read_lines(path)
    if lines is None:
        return None
    try:
        count = int(lines[0])
        entries = [_epoch_line(line) for line in lines[1 : 1 + count]]
    except (ValueError, IndexError):
        return None
    if len(entries) != count:
        return None
    for (epoch, start), (next_epoch, next_start) in zip(entries, entries[1:], strict=False):
        if next_epoch <= epoch or next_start < start:
            return None
    return entries


def _epoch_line(line: str) -> tuple[int, int]:
    epoch, start = line.split()
    return int(epoch), int(start)


def write_epochs(path: Path, entries: list[tuple[int, int]], *, durable: bool = True) -> None:
    body = "".join(f"{epoch} {start}\n" for epoch, start in entries)
    write_atomic(path, f"{VERSION}\n{len(entries)}\n{body}", durable=durable)
