"""Topics and their partitions (partition.py): the registry persisted in `topics.json`
in the first log directory; each partition's log lies in one of the log directories
(log_dirs.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from odradek.broker.dataplane.log_dirs import LogDir, LogDirs, is_full_disk, moved_name
from odradek.broker.dataplane.partition import Partition
from odradek.broker.settings.topic_configs import TopicError
from odradek.broker.slices import Slices
from odradek.storage import LogConfig, PartitionLog

MAX_TOPIC_NAME = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
HIDDEN_TOPICS = ("__cluster_metadata",)

logger = structlog.get_logger("broker")


def check_topic_name(name: str) -> None:
    """TopicError (INVALID_TOPIC_EXCEPTION) in Kafka's words for a name it refuses."""
    if not name:
        raise TopicError(17, "Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise TopicError(17, f"Topic name is invalid: '{name}' is not allowed")
    if len(name) > MAX_TOPIC_NAME:
        raise TopicError(
            17,
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
            f"length {MAX_TOPIC_NAME}",
        )
    if not _LEGAL_NAME.match(name):
        raise TopicError(
            17,
            f"Topic name is invalid: '{name}' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'",
        )


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    partitions: list[Partition] = field(default_factory=list)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class TopicRegistry:
    def __init__(self, log_dirs: LogDirs, defaults: LogConfig) -> None:
        self.log_dirs = log_dirs
        self.data_dir = log_dirs.first.path
        self.defaults = defaults
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        # where the directories' scan found each partition (several directories only)
        self._found: dict[str, LogDir] = {}
        # future logs found at start-up: the moves to resume (replica_moves.py)
        self.found_futures: list[tuple[Partition, Path]] = []
        # AlterReplicaLogDirs named a directory for a replica this node has not yet
        self.preferred: dict[tuple[str, int], LogDir] = {}
        # told of each directory that fails, after its partitions went offline
        self.dir_failed: list[Callable[[LogDir, list[Partition]], None]] = []
        self._loading = False
        self.partitions_made = 0  # partitions made since start (new ones live long)
        self._opening: set[str] = set()  # topics whose logs are being opened

    @property
    def _index_path(self) -> Path:
        return self.data_dir / "topics.json"

    def load(self) -> None:
        """Every topic, each hosted partition's log opened in the directory it lies in
        (raises LogDirError as LogDirs.open and scan do)."""
        for log_dir, exc in self.log_dirs.open():
            logger.error("log directory offline", log_dir=log_dir.name, cause=str(exc))
        futures: dict[str, LogDir] = {}
        if self.log_dirs.several:
            self._found, futures, removed = self.log_dirs.scan()
            for path in removed:
                shutil.rmtree(path, ignore_errors=True)
            futures = self._promote_finished_moves(futures)
        if self._index_path.exists():
            self._loading = True
            try:
                for entry in json.loads(self._index_path.read_text()):
                    topic = Topic(entry["name"], uuid.UUID(entry["id"]), dict(entry["configs"]))
                    self._register(topic)
                    hosted = entry.get("hosted")
                    self._open_partitions(
                        topic, entry["partitions"], None if hosted is None else set(hosted)
                    )
            finally:
                self._loading = False
        for partition in self.hosted_partitions():
            target = futures.get(partition.dir_name)
            if target is not None:
                for path in target.path.iterdir():
                    if moved_name(path.name) == (partition.dir_name, "-future"):
                        self.found_futures.append((partition, path))
        self._found = {}

    def _promote_finished_moves(self, futures: dict[str, LogDir]) -> dict[str, LogDir]:
        """A future log whose current one is gone is a move that stopped after its
        last step began (the old log is removed only once the future is complete)."""
        pending = {}
        every_dir_online = all(d.online for d in self.log_dirs)
        for name, log_dir in futures.items():
            if name in self._found or not every_dir_online:
                pending[name] = log_dir
                continue
            for path in list(log_dir.path.iterdir()):
                if moved_name(path.name) == (name, "-future"):
                    path.rename(log_dir.path / name)
                    self._found[name] = log_dir
        return pending

    def _save(self) -> None:
        entries: list[dict[str, Any]] = []
        for t in self._by_name.values():
            entry: dict[str, Any] = {
                "name": t.name,
                "id": str(t.topic_id),
                "partitions": len(t.partitions),
                "configs": t.configs,
            }
            if not all(p.hosted for p in t.partitions):
                entry["hosted"] = [p.index for p in t.partitions if p.hosted]
            entries.append(entry)
        tmp = self._index_path.with_suffix(".tmp")
        with open(tmp, "w") as out:
            json.dump(entries, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self._index_path)

    def _register(self, topic: Topic) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    def _open_partitions(self, topic: Topic, count: int, hosted: set[int] | None = None) -> None:
        """Partitions up to `count`, with a log for those in `hosted` (None: all)."""
        config = self.log_config(topic)
        self.partitions_made += max(0, count - len(topic.partitions))
        for index in range(len(topic.partitions), count):
            if hosted is None or index in hosted:
                topic.partitions.append(self._open(topic, index, config))
            else:
                topic.partitions.append(Partition(topic, index, None))

    def _open(self, topic: Topic, index: int, config: LogConfig) -> Partition:
        """The partition with its log, in the directory that has it or gets it."""
        name = f"{topic.name}-{index}"
        while True:
            log_dir = self._locate(topic.name, index)
            if log_dir is None:  # it lies in a directory that is offline
                return Partition(topic, index, None, offline=True)
            try:
                plog = PartitionLog.open(log_dir.path / name, config)
            except OSError as exc:
                if is_full_disk(exc) or not self.log_dirs.several:
                    raise
                self.fail_dir(log_dir, exc, "open log")
                continue
            log_dir.partitions += 1
            return Partition(topic, index, plog, log_dir)

    def _locate(self, topic: str, index: int) -> LogDir | None:
        log_dirs = self.log_dirs
        if not log_dirs.several:
            return log_dirs.first
        found = self._found.get(f"{topic}-{index}")
        if found is not None:
            return found
        if self._loading and len(log_dirs.online()) < len(log_dirs.dirs):
            return None  # not in an online directory: it may be in an offline one
        preferred = self.preferred.pop((topic, index), None)
        if preferred is not None and preferred.online:
            return preferred
        return log_dirs.place()

    def host(self, partition: Partition) -> None:
        """A replica of `partition` is placed on this node: open its (empty) log."""
        if partition.hosted:
            return
        topic = partition.topic
        topic.partitions[partition.index] = self._open(
            topic, partition.index, self.log_config(topic)
        )
        self.partitions_made += 1
        self._save()

    def unhost(self, partition: Partition) -> None:
        """This node's replica of `partition` moved to other nodes: its log goes (the
        partition's place in the cluster, `replication`, stays)."""
        if not partition.hosted:
            return
        topic = partition.topic
        if not partition.offline:
            partition.log.delete()
            if partition.log_dir is not None:
                partition.log_dir.partitions -= 1
        partition.data_arrived()
        remaining = Partition(topic, partition.index, None)
        remaining.replication = partition.replication
        topic.partitions[partition.index] = remaining
        self._save()

    def fail_dir(self, log_dir: LogDir, exc: OSError, operation: str) -> None:
        """A log directory failed: it goes offline with every partition in it, the
        others keep serving (the listeners in `dir_failed` do the rest)."""
        if not log_dir.online:
            return
        log_dir.online = False
        lost = [p for p in self.hosted_partitions() if p.log_dir is log_dir]
        for partition in lost:
            partition.go_offline()
        logger.error(
            "log directory offline",
            log_dir=log_dir.name,
            operation=operation,
            cause=os.strerror(exc.errno) if exc.errno else str(exc),
            partitions=len(lost),
            online_log_dirs=[d.name for d in self.log_dirs.online()],
        )
        for listener in self.dir_failed:
            listener(log_dir, lost)

    def fail_log(self, plog: PartitionLog, exc: OSError, operation: str) -> bool:
        """An I/O error on a log: its directory fails unless the disk is only full
        (that fails the request alone). True if the directory went offline."""
        if is_full_disk(exc):
            return False
        log_dir = self.log_dirs.holding(plog.directory)
        if log_dir is None:
            return False
        self.fail_dir(log_dir, exc, operation)
        return True

    def hosted_partitions(self) -> Iterator[Partition]:
        """The partitions this node keeps a log of (in an online directory)."""
        for topic in list(self._by_name.values()):
            for partition in topic.partitions:
                if partition.hosted and not partition.offline:
                    yield partition

    def still_hosted(self, partition: Partition) -> bool:
        """Is `partition` (taken from hosted_partitions a while ago) hosted still: its
        topic not deleted, its replica not moved away, its directory online?"""
        topic = partition.topic
        return (
            self._by_name.get(topic.name) is topic
            and topic.partitions[partition.index] is partition
            and partition.hosted
            and not partition.offline
        )

    def log_config(self, topic: Topic) -> LogConfig:
        return LogConfig.from_topic_configs(topic.configs, self.defaults)

    def __iter__(self) -> Iterator[Topic]:
        """The topics clients know of (the controller's metadata log is none of them)."""
        return iter([t for t in self._by_name.values() if t.name not in HIDDEN_TOPICS])

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Topic | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def partition(self, name: str, index: int) -> Partition | None:
        topic = self._by_name.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def partition_by_id(self, topic_id: uuid.UUID, index: int) -> Partition | None:
        topic = self.by_id(topic_id)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def validate_new(self, name: str, partitions: int, configs: Mapping[str, str]) -> None:
        check_topic_name(name)
        if name in self._by_name or name in self._opening:
            raise TopicError(36, f"Topic '{name}' already exists.")
        if partitions <= 0:
            raise TopicError(37, "Number of partitions was set to an invalid non-positive value.")
        if partitions > 100000:
            raise TopicError(37, "number of partitions is too large")
        self.check_configs(configs)
        collision = name.replace(".", "_")
        for other in self._by_name:
            if other.replace(".", "_") == collision:
                raise TopicError(17, f"topic {name!r} collides with existing topic {other!r}")

    def check_configs(self, configs: Mapping[str, str]) -> None:
        try:
            LogConfig.from_topic_configs(configs, self.defaults)
        except ValueError as exc:
            raise TopicError(40, str(exc)) from exc

    def create(self, name: str, partitions: int, configs: Mapping[str, str]) -> Topic:
        self.validate_new(name, partitions, configs)
        topic = Topic(name, uuid.uuid4(), dict(configs))
        self._register(topic)
        self._open_partitions(topic, partitions)
        self._save()
        return topic

    async def create_in_slices(
        self, name: str, partitions: int, configs: Mapping[str, str]
    ) -> Topic:
        self.validate_new(name, partitions, configs)
        return await self.add_in_slices(name, uuid.uuid4(), partitions, configs)

    async def add_in_slices(
        self,
        name: str,
        topic_id: uuid.UUID,
        partitions: int,
        configs: Mapping[str, str],
        hosted: set[int] | None = None,
    ) -> Topic:
        """A topic as it is (the controller of a cluster has checked and named it, or
        create_in_slices), its logs opened a slice of the event loop at a time (thousands
        of partitions take seconds of file work); it is listed once all are open."""
        topic = Topic(name, topic_id, dict(configs))
        config = self.log_config(topic)
        self._opening.add(name)
        try:
            slices = Slices()
            for index in range(partitions):
                if hosted is None or index in hosted:
                    topic.partitions.append(self._open(topic, index, config))
                else:
                    topic.partitions.append(Partition(topic, index, None))
                await slices.pause_if_due()
        except BaseException:
            for partition in topic.partitions:  # none of it stays
                if partition.hosted and not partition.offline:
                    partition.log.delete()
                    if partition.log_dir is not None:
                        partition.log_dir.partitions -= 1
            raise
        finally:
            self._opening.discard(name)
        self.partitions_made += partitions
        self._register(topic)
        self._save()
        return topic

    def delete(self, name: str) -> Topic:
        topic = self._by_name.pop(name)
        del self._by_id[topic.topic_id]
        self._save()
        for partition in topic.partitions:
            if partition.hosted and not partition.offline:
                partition.log.delete()
                if partition.log_dir is not None:
                    partition.log_dir.partitions -= 1
            partition.data_arrived()
        return topic

    def add_partitions(self, name: str, total: int, hosted: set[int] | None = None) -> None:
        topic = self._by_name[name]
        self._open_partitions(topic, total, hosted)
        self._save()

    def set_configs(self, name: str, configs: Mapping[str, str]) -> None:
        topic = self._by_name[name]
        new = LogConfig.from_topic_configs(configs, self.defaults)
        topic.configs = dict(configs)
        for partition in topic.partitions:
            if partition.hosted and not partition.offline:
                partition.log.update_config(new)
        self._save()

    def close(self) -> None:
        for partition in self.hosted_partitions():
            partition.producers.save(partition.log.directory, partition.log.log_end_offset)
            partition.log.close()

    def remove_orphans(self) -> None:
        """Partition directories of topics deleted before a crash (and their future logs)."""
        known = {p.dir_name for t in self._by_name.values() for p in t.partitions if p.hosted}
        for log_dir in self.log_dirs.online():
            for path in log_dir.path.iterdir():
                if not path.is_dir():
                    continue
                moved = moved_name(path.name)
                name = path.name if moved is None else moved[0]
                is_partition_dir = "-" in name and name.rsplit("-", 1)[-1].isdigit()
                if is_partition_dir and name not in known:
                    shutil.rmtree(path, ignore_errors=True)
