"""How each of Kafka's metadata records Odradek keeps itself changes the controller's
view of the cluster (shard.py); the rest go to its documents."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from odradek.coordinator.cluster import kafka_format as kf
from odradek.coordinator.cluster import records as rec
from odradek.coordinator.cluster.kafka_format import MetadataRecord

if TYPE_CHECKING:
    from odradek.coordinator.cluster.shard import ClusterShard


def replay_registration(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    shard.registered(record["broker_id"], rec.broker_of(record), offset)


def replay_registration_change(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    known = shard.brokers.get(record["broker_id"])
    if known is not None and record["fenced"] != 0:
        known.value = replace(known.value, fenced=record["fenced"] > 0)


def replay_fencing(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    known = shard.brokers.get(record["id"])
    if known is not None:
        known.value = replace(known.value, fenced=record.api_key == kf.FENCE_BROKER.api_key)


def replay_unregistration(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    shard.brokers.pop(record["broker_id"], None)


def replay_controller(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    if record.api_key == kf.REGISTER_CONTROLLER.api_key:
        shard.controllers[record["controller_id"]] = rec.controller_of(record)
    else:
        shard.controllers.pop(record["controller_id"], None)


def replay_topic(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    shard.add_topic(record["name"], record["topic_id"], {})


def replay_topic_removal(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    name = shard.topic_names.get(record["topic_id"])
    if name is not None:
        shard.remove_topic(name)


def replay_config(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    if record["resource_type"] != rec.TOPIC_RESOURCE:
        shard.replay_document(record, offset)
        return
    state = shard.topics.get(record["resource_name"])
    if state is None:
        return
    shard.touched(record["resource_name"])
    if record["value"] is None:
        state.configs.pop(record["name"], None)
    else:
        state.configs[record["name"]] = record["value"]


def replay_partition(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    state = shard.topic_by_id(record["topic_id"])
    if state is not None:
        state.partitions[record["partition_id"]] = rec.partition_of(record)
        shard.touched(shard.topic_names[record["topic_id"]])


def replay_partition_change(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    state = shard.topic_by_id(record["topic_id"])
    old = None if state is None else state.partitions.get(record["partition_id"])
    if state is not None and old is not None:
        state.partitions[record["partition_id"]] = rec.changed_partition(old, record)
        shard.touched(shard.topic_names[record["topic_id"]])


def replay_producer_ids(shard: ClusterShard, record: MetadataRecord, offset: int) -> None:
    shard.next_producer_id = max(shard.next_producer_id, record["next_producer_id"])


REPLAY: dict[int, Callable[[ClusterShard, MetadataRecord, int], None]] = {
    kf.REGISTER_BROKER.api_key: replay_registration,
    kf.BROKER_REGISTRATION_CHANGE.api_key: replay_registration_change,
    kf.FENCE_BROKER.api_key: replay_fencing,
    kf.UNFENCE_BROKER.api_key: replay_fencing,
    kf.UNREGISTER_BROKER.api_key: replay_unregistration,
    kf.REGISTER_CONTROLLER.api_key: replay_controller,
    kf.UNREGISTER_CONTROLLER.api_key: replay_controller,
    kf.TOPIC.api_key: replay_topic,
    kf.REMOVE_TOPIC.api_key: replay_topic_removal,
    kf.CONFIG.api_key: replay_config,
    kf.PARTITION.api_key: replay_partition,
    kf.PARTITION_CHANGE.api_key: replay_partition_change,
    kf.PRODUCER_IDS.api_key: replay_producer_ids,
}
