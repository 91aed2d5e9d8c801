"""The log directories (`log.dirs`): their identity, whether they are online, and which
one a new partition goes to.

Each directory keeps a `meta.properties` as Kafka's do (cluster.id, node.id, a
directory.id of its own, version=1); a directory that belongs to another cluster or
node stops the broker. A new partition goes to the online directory holding the fewest
partitions (current and future logs), the first listed on a tie. The first directory
also keeps the broker's own files (topics.json, ACLs, credentials, ...): when it
fails the broker stops, as Kafka does when its metadata log directory fails.

Partition directories are named as Kafka names them: `<topic>-<partition>`, a
replica being moved there `<topic>-<partition>.<uuid>-future`, one being removed
`<topic>-<partition>.<uuid>-delete`.
"""

from __future__ import annotations

import base64
import errno
import os
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from odradek.storage.checkpoint import write_atomic

META_PROPERTIES = "meta.properties"
FUTURE_SUFFIX = "-future"
DELETE_SUFFIX = "-delete"
# <topic>-<partition>.<32 hex digits>-future (or -delete)
_MOVED_NAME = re.compile(r"^(.+-\d+)\.([0-9a-f]{32})(-future|-delete)$")
# errors that mean the disk is full, not broken: the request fails, the directory stays
FULL_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class LogDirError(Exception):
    """A log directory the broker cannot start with (another cluster's, a partition
    found in two directories)."""


def is_full_disk(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FULL_DISK_ERRNOS


def kafka_uuid(value: uuid.UUID) -> str:
    """A Uuid as Kafka writes it: URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def new_directory_id() -> uuid.UUID:
    """A random id Kafka would accept: not one of its reserved ones (the first 100),
    not starting with '-' (unreadable on a command line)."""
    while True:
        value = uuid.uuid4()
        if value.int >= 100 and not kafka_uuid(value).startswith("-"):
            return value


def parse_kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def future_name(partition_dir: str) -> str:
    return f"{partition_dir}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"


def delete_name(partition_dir: str) -> str:
    return f"{partition_dir}.{uuid.uuid4().hex}{DELETE_SUFFIX}"


def moved_name(name: str) -> tuple[str, str] | None:
    """(`<topic>-<partition>`, "-future" or "-delete") of a moved directory's name."""
    match = _MOVED_NAME.match(name)
    return (match.group(1), match.group(3)) if match else None


@dataclass(eq=False)
class LogDir:
    path: Path  # absolute, as DescribeLogDirs names it
    directory_id: uuid.UUID = field(default_factory=new_directory_id)
    online: bool = True
    partitions: int = 0  # current and future logs here: placement picks the fewest

    @property
    def name(self) -> str:
        return str(self.path)


class LogDirs:
    """Every configured log directory, in the order of `log.dirs`."""

    def __init__(self, paths: Sequence[Path], cluster_id: str, node_id: int) -> None:
        if not paths:
            raise ValueError("no log directory")
        self.dirs = [LogDir(Path(os.path.abspath(p))) for p in paths]
        self.cluster_id = cluster_id
        self.node_id = node_id
        self._by_path = {d.name: d for d in self.dirs}

    @property
    def first(self) -> LogDir:
        return self.dirs[0]

    @property
    def several(self) -> bool:
        return len(self.dirs) > 1

    def __iter__(self) -> Iterator[LogDir]:
        return iter(self.dirs)

    def online(self) -> list[LogDir]:
        return [d for d in self.dirs if d.online]

    def get(self, path: str) -> LogDir | None:
        """The directory named by its absolute path exactly (None for any other)."""
        return self._by_path.get(path)

    def holding(self, partition_dir: Path) -> LogDir | None:
        """The log directory a partition's directory lies in."""
        return self._by_path.get(str(partition_dir.parent))

    def open(self) -> list[tuple[LogDir, OSError]]:
        """Create each directory and its meta.properties; a directory that cannot be
        read or written starts offline (returned with the error), except the first.
        Raises LogDirError for a directory of another cluster or node, or OSError
        when the first fails."""
        failed: list[tuple[LogDir, OSError]] = []
        for log_dir in self.dirs:
            try:
                log_dir.path.mkdir(parents=True, exist_ok=True)
                self._identify(log_dir)
            except OSError as exc:
                if log_dir is self.first:
                    raise
                log_dir.online = False
                failed.append((log_dir, exc))
        return failed

    def _identify(self, log_dir: LogDir) -> None:
        path = log_dir.path / META_PROPERTIES
        try:
            text = path.read_text()
        except FileNotFoundError:
            self._write_meta(log_dir)
            return
        props = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and not line.startswith("#"):
                props[key.strip()] = value.strip()
        if props.get("cluster.id", self.cluster_id) != self.cluster_id:
            raise LogDirError(
                f"log directory {log_dir.path} belongs to cluster {props['cluster.id']}, "
                f"not {self.cluster_id} (its {META_PROPERTIES})"
            )
        if props.get("node.id", str(self.node_id)) != str(self.node_id):
            raise LogDirError(
                f"log directory {log_dir.path} belongs to node {props['node.id']}, "
                f"not {self.node_id} (its {META_PROPERTIES})"
            )
        try:
            log_dir.directory_id = parse_kafka_uuid(props["directory.id"])
        except (KeyError, ValueError):
            self._write_meta(log_dir)
            return
        if "cluster.id" not in props or "node.id" not in props:
            self._write_meta(log_dir)

    def assign_directory_id(self, log_dir: LogDir, directory_id: uuid.UUID) -> None:
        """Give a new directory the id it was formatted for (a new controller's
        --initial-controllers names it, as `kafka-storage format` writes it)."""
        log_dir.directory_id = directory_id
        self._write_meta(log_dir)

    def _write_meta(self, log_dir: LogDir) -> None:
        now = datetime.now(UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
        text = (
            f"#\n#{now}\n"
            f"cluster.id={self.cluster_id}\n"
            f"directory.id={kafka_uuid(log_dir.directory_id)}\n"
            f"node.id={self.node_id}\n"
            "version=1\n"
        )
        write_atomic(log_dir.path / META_PROPERTIES, text)

    def scan(self) -> tuple[dict[str, LogDir], dict[str, LogDir], list[Path]]:
        """What the online directories hold: partition directory name -> its log
        directory, the same for future logs, and the directories left by a removal.
        A partition found in two directories is a LogDirError, as on Kafka."""
        current: dict[str, LogDir] = {}
        future: dict[str, LogDir] = {}
        removed: list[Path] = []
        for log_dir in self.online():
            for entry in os.scandir(log_dir.path):
                if not entry.is_dir():
                    continue
                moved = moved_name(entry.name)
                if moved is None:
                    if not entry.name.rsplit("-", 1)[-1].isdigit():
                        continue
                    other = current.get(entry.name)
                    if other is not None:
                        raise LogDirError(
                            f"partition {entry.name} is found in both {other.path} and "
                            f"{log_dir.path}: remove one of them"
                        )
                    current[entry.name] = log_dir
                elif moved[1] == FUTURE_SUFFIX:
                    future[moved[0]] = log_dir
                else:
                    removed.append(Path(entry.path))
        return current, future, removed

    def place(self) -> LogDir:
        """The online directory for a new partition: the one holding the fewest."""
        online = self.online()
        if not online:
            raise OSError(errno.EIO, "every log directory is offline")
        return min(online, key=lambda d: d.partitions)

    def probe(self, log_dir: LogDir) -> None:
        """Raises OSError unless the directory is still there and writable."""
        probe = log_dir.path / ".odradek-write-check"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.close(fd)
        os.unlink(probe)
