"""What the controller knows of the cluster, and the `__cluster_metadata` records that
say it, in Kafka's own format (kafka_format.py): keyless records, each a change.

- RegisterBrokerRecord registers a broker (fenced or not);
  BrokerRegistrationChangeRecord fences or unfences it; UnregisterBrokerRecord removes
  it.
- TopicRecord creates a topic, ConfigRecords (resource type TOPIC) set or remove its
  configs, PartitionRecord creates a partition (or replaces it whole) and
  PartitionChangeRecord changes one: a leader given means a new leader epoch, and
  every change is a new partition epoch. RemoveTopicRecord deletes a topic.
- ProducerIdsRecord hands a block of producer ids to a broker.
- The rest (ACLs, SCRAM, quotas, features, tokens, other configs) is the business of
  the documents the brokers' stores keep (broker/cluster/metadata_documents.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Protocol

from odradek.coordinator.cluster import kafka_format as kf
from odradek.coordinator.cluster.kafka_format import MetadataRecord
from odradek.coordinator.runtime import Record

NO_LEADER = -1
NO_LEADER_CHANGE = -2
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
PROTOCOL_NAMES = {code: name for name, code in SECURITY_PROTOCOLS.items()}


@dataclass(frozen=True)
class Endpoint:
    listener: str
    host: str
    port: int
    security_protocol: str


@dataclass(frozen=True)
class BrokerValue:
    epoch: int
    incarnation_id: uuid.UUID
    fenced: bool
    rack: str | None
    endpoints: tuple[Endpoint, ...]
    log_dirs: tuple[uuid.UUID, ...] = ()  # its online log directories

    def default_directory(self) -> uuid.UUID:
        """Where a new replica on this broker lies, as Kafka's controller assigns it: its
        only directory; with several, unassigned (the broker picks one and reports it)."""
        return self.log_dirs[0] if len(self.log_dirs) == 1 else kf.ZERO_UUID


@dataclass(frozen=True)
class PartitionValue:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    # a reassignment in progress: `replicas` is the union of the old and the target
    # replicas (the target's first), as Kafka's PartitionRecord keeps it
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    # the log directory of each replica, in the order of `replicas` (empty, or the zero
    # uuid for one: not assigned yet), as brokers report them (AssignReplicasToDirs)
    directories: tuple[uuid.UUID, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    def directories_of(self, replicas: tuple[int, ...]) -> tuple[uuid.UUID, ...]:
        """The directories of `replicas` (a new replica set), as far as known here."""
        known = dict(zip(self.replicas, self.replica_directories(), strict=True))
        return assigned(tuple(known.get(r, kf.ZERO_UUID) for r in replicas))

    def directory_of(self, node_id: int) -> uuid.UUID:
        """The directory of `node_id`'s replica (a replica of the partition)."""
        return self.replica_directories()[self.replicas.index(node_id)]

    def replica_directories(self) -> tuple[uuid.UUID, ...]:
        """The directory of each replica, unassigned where not known."""
        if len(self.directories) == len(self.replicas):
            return self.directories
        return (kf.ZERO_UUID,) * len(self.replicas)


class MetadataDocuments(Protocol):
    """The state kept as documents (ACLs, SCRAM credentials, quotas, features, tokens,
    group and other configs): each a whole document the brokers' stores adopt, written
    to the log as Kafka's records of it (broker/cluster/metadata_documents.py)."""

    documents: dict[str, bytes]

    def records(self, name: str, before: bytes | None, after: bytes) -> list[MetadataRecord]:
        """The records that turn document `name` from `before` into `after`."""

    def replay(self, record: MetadataRecord, offset: int) -> None:
        """A record of a type the shard does not keep itself."""


def written(record: kf.MetadataRecord) -> Record:
    return None, kf.encode(record)


# -- brokers -------------------------------------------------------------------------


def register_broker(node_id: int, value: BrokerValue) -> Record:
    return written(
        kf.record(
            kf.REGISTER_BROKER,
            broker_id=node_id,
            incarnation_id=value.incarnation_id,
            broker_epoch=value.epoch,
            end_points=_endpoints(value.endpoints),
            features=[],
            rack=value.rack,
            fenced=value.fenced,
            log_dirs=list(value.log_dirs),
        )
    )


def broker_of(record: kf.MetadataRecord) -> BrokerValue:
    return BrokerValue(
        record["broker_epoch"],
        record["incarnation_id"],
        record["fenced"],
        record["rack"],
        _endpoints_of(record),
        tuple(record["log_dirs"] or ()),
    )


def broker_fenced(node_id: int, epoch: int, fenced: bool) -> Record:
    return written(
        kf.record(
            kf.BROKER_REGISTRATION_CHANGE,
            broker_id=node_id,
            broker_epoch=epoch,
            fenced=1 if fenced else -1,
        )
    )


def unregister_broker(node_id: int, epoch: int) -> Record:
    return written(kf.record(kf.UNREGISTER_BROKER, broker_id=node_id, broker_epoch=epoch))


def producer_ids(node_id: int, epoch: int, next_id: int) -> Record:
    return written(
        kf.record(kf.PRODUCER_IDS, broker_id=node_id, broker_epoch=epoch, next_producer_id=next_id)
    )


@dataclass(frozen=True)
class ControllerValue:
    incarnation_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]


def _endpoints(endpoints: tuple[Endpoint, ...]) -> list[dict[str, object]]:
    return [
        {
            "name": e.listener,
            "host": e.host,
            "port": e.port,
            "security_protocol": SECURITY_PROTOCOLS.get(e.security_protocol, 0),
        }
        for e in endpoints
    ]


def _endpoints_of(record: kf.MetadataRecord) -> tuple[Endpoint, ...]:
    return tuple(
        Endpoint(e["name"], e["host"], e["port"], PROTOCOL_NAMES.get(e["security_protocol"], ""))
        for e in record["end_points"]
    )


def register_controller(node_id: int, value: ControllerValue) -> Record:
    return written(
        kf.record(
            kf.REGISTER_CONTROLLER,
            controller_id=node_id,
            incarnation_id=value.incarnation_id,
            zk_migration_ready=False,
            end_points=_endpoints(value.endpoints),
            features=[],
        )
    )


def controller_of(record: kf.MetadataRecord) -> ControllerValue:
    return ControllerValue(record["incarnation_id"], _endpoints_of(record))


def unregister_controller(node_id: int) -> Record:
    return written(kf.record(kf.UNREGISTER_CONTROLLER, controller_id=node_id))


# -- topics and partitions -------------------------------------------------------------


def topic(name: str, topic_id: uuid.UUID) -> Record:
    return written(kf.record(kf.TOPIC, name=name, topic_id=topic_id))


def remove_topic(topic_id: uuid.UUID) -> Record:
    return written(kf.record(kf.REMOVE_TOPIC, topic_id=topic_id))


def config_records(
    resource_type: int, resource: str, before: dict[str, str], after: dict[str, str]
) -> list[MetadataRecord]:
    """ConfigRecords that turn `before` into `after` (a null value removes one)."""
    changed: list[tuple[str, str | None]] = [
        (name, value) for name, value in sorted(after.items()) if before.get(name) != value
    ]
    changed += [(name, None) for name in sorted(before) if name not in after]
    return [
        kf.record(
            kf.CONFIG, resource_type=resource_type, resource_name=resource, name=name, value=value
        )
        for name, value in changed
    ]


def new_topic(
    name: str, topic_id: uuid.UUID, configs: dict[str, str], partitions: list[Record]
) -> list[Record]:
    """A new topic's record, its configs' and its partitions'."""
    return [
        topic(name, topic_id),
        *config_changes(TOPIC_RESOURCE, name, {}, dict(configs)),
        *partitions,
    ]


def config_changes(
    resource_type: int, resource: str, before: dict[str, str], after: dict[str, str]
) -> list[Record]:
    return [written(r) for r in config_records(resource_type, resource, before, after)]


def partition(topic_id: uuid.UUID, index: int, value: PartitionValue) -> Record:
    return written(
        kf.record(
            kf.PARTITION,
            partition_id=index,
            topic_id=topic_id,
            replicas=value.replicas,
            isr=value.isr,
            removing_replicas=value.removing,
            adding_replicas=value.adding,
            leader=value.leader,
            leader_epoch=value.leader_epoch,
            partition_epoch=value.partition_epoch,
            directories=value.replica_directories(),
        )
    )


def partition_of(record: kf.MetadataRecord) -> PartitionValue:
    return PartitionValue(
        tuple(record["replicas"]),
        tuple(record["isr"]),
        record["leader"],
        record["leader_epoch"],
        record["partition_epoch"],
        tuple(record["adding_replicas"]),
        tuple(record["removing_replicas"]),
        assigned(tuple(record["directories"] or ())),
    )


def assigned(directories: tuple[uuid.UUID, ...]) -> tuple[uuid.UUID, ...]:
    """Directories as a PartitionValue keeps them: none when none is assigned."""
    return directories if any(d != kf.ZERO_UUID for d in directories) else ()


def partition_change(
    topic_id: uuid.UUID, index: int, old: PartitionValue, new: PartitionValue
) -> Record:
    """The record that turns `old` into `new`: a PartitionChangeRecord naming what
    changed, or a whole PartitionRecord when the epochs moved otherwise than a change
    moves them."""
    new_leader_epoch = new.leader_epoch == old.leader_epoch + 1
    if new.partition_epoch != old.partition_epoch + 1 or not (
        new_leader_epoch or new.leader_epoch == old.leader_epoch
    ):
        return partition(topic_id, index, new)
    if new.leader != old.leader and not new_leader_epoch:
        return partition(topic_id, index, new)
    fields = {
        "partition_id": index,
        "topic_id": topic_id,
        "leader": new.leader if new_leader_epoch else NO_LEADER_CHANGE,
        "isr": new.isr if new.isr != old.isr else None,
        "replicas": new.replicas if new.replicas != old.replicas else None,
        "adding_replicas": new.adding if new.adding != old.adding else None,
        "removing_replicas": new.removing if new.removing != old.removing else None,
    }
    if new.replicas != old.replicas:
        fields["directories"] = new.replica_directories()
    elif new.directories and new.directories != old.replica_directories():
        fields["directories"] = new.directories
    return written(kf.MetadataRecord(kf.PARTITION_CHANGE.api_key, fields))


def changed_partition(old: PartitionValue, record: kf.MetadataRecord) -> PartitionValue:
    """`old` after a PartitionChangeRecord, as Kafka merges one."""
    leader = record["leader"]
    changed = replace(
        old,
        leader=old.leader if leader == NO_LEADER_CHANGE else leader,
        leader_epoch=old.leader_epoch + (leader != NO_LEADER_CHANGE),
        partition_epoch=old.partition_epoch + 1,
    )

    def given(name: str, old_value: tuple[int, ...]) -> tuple[int, ...]:
        value = record[name]
        return old_value if value is None else tuple(value)

    directories = record["directories"]
    replicas = given("replicas", old.replicas)
    if directories is None:  # unchanged, unless the replicas changed
        directories = old.directories if replicas == old.replicas else ()
    return replace(
        changed,
        isr=given("isr", old.isr),
        replicas=replicas,
        adding=given("adding_replicas", old.adding),
        removing=given("removing_replicas", old.removing),
        directories=assigned(tuple(directories)),
    )
