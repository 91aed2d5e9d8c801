"""What the broker does when one of its log directories fails, once the registry
(dataplane/topics.py) has taken the directory's partitions offline: the coordinators
of the internal partitions there resign, followers stop fetching into them, and with
no directory left, or the first one gone (it keeps the broker's own files, as Kafka
stops when its metadata log directory fails), the broker stops with exit status 1."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import structlog

from odradek.broker.dataplane.log_dirs import LogDir
from odradek.broker.dataplane.topics import Partition, TopicRegistry

if TYPE_CHECKING:
    from odradek.broker.cluster.replication import ReplicaManager

log = structlog.get_logger("broker")


class Broker(Protocol):
    failed: bool

    @property
    def topics(self) -> TopicRegistry: ...
    @property
    def replicas(self) -> ReplicaManager | None: ...

    def coordinator_moved(self, partition: Partition, leads: bool) -> None: ...

    def request_stop(self) -> None: ...


def dir_failed(broker: Broker, log_dir: LogDir, lost: list[Partition]) -> None:
    replicas = broker.replicas
    for partition in lost:
        if partition.topic.is_internal:
            broker.coordinator_moved(partition, leads=False)
        if replicas is not None and replicas.fetchers is not None:
            replicas.fetchers.remove(partition)
    log_dirs = broker.topics.log_dirs
    if log_dir is not log_dirs.first and log_dirs.online():
        return
    if log_dirs.online():
        reason = "the first log directory, which keeps the broker's files, is offline"
    else:
        reason = "every log directory is offline"
    log.error(f"shutting down: {reason}", log_dir=log_dir.name)
    broker.failed = True
    broker.request_stop()
