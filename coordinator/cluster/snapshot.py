"""The whole of a cluster's metadata as records, in the order Kafka's controller writes
a snapshot: features first, then controllers, brokers, topics with their configs and
partitions, producer ids, and the rest of the documents. A shard that replays them
alone ends in the state of the shard they were taken from.

`capture` copies what a snapshot holds, in a moment, on the shard's executor; turning
the copy into records (`records_of`) takes longer with many partitions and is done
off the event loop."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.coordinator.cluster import records as rec
from odradek.coordinator.runtime import Record

if TYPE_CHECKING:
    from odradek.coordinator.cluster.shard import ClusterShard

FEATURES_DOCUMENT = "features"  # broker/cluster/controller_documents.FEATURES


@dataclass(frozen=True)
class CapturedTopic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    partitions: dict[int, rec.PartitionValue]


@dataclass(frozen=True)
class Captured:
    controllers: dict[int, rec.ControllerValue]
    brokers: dict[int, rec.BrokerValue]
    topics: list[CapturedTopic]
    next_producer_id: int
    documents: dict[str, bytes]
    codec: rec.MetadataDocuments | None


def capture(shard: ClusterShard) -> Captured:
    """A copy of the shard's state (its values are immutable; only the maps are new)."""
    return Captured(
        dict(shard.controllers),
        {node_id: registration.value for node_id, registration in shard.brokers.items()},
        [
            CapturedTopic(name, state.topic_id, dict(state.configs), dict(state.partitions))
            for name, state in shard.topics.items()
        ],
        shard.next_producer_id,
        dict(shard.documents),
        shard.metadata_documents,
    )


def records_of(state: Captured) -> list[Record]:
    records: list[Record] = []
    codec, documents = state.codec, state.documents
    if codec is not None and FEATURES_DOCUMENT in documents:
        changes = codec.records(FEATURES_DOCUMENT, None, documents[FEATURES_DOCUMENT])
        records += [rec.written(change) for change in changes]
    for node_id, controller in sorted(state.controllers.items()):
        records.append(rec.register_controller(node_id, controller))
    for node_id, broker in sorted(state.brokers.items()):
        records.append(rec.register_broker(node_id, broker))
    for topic in sorted(state.topics, key=lambda t: t.name):
        records.append(rec.topic(topic.name, topic.topic_id))
        records += rec.config_changes(rec.TOPIC_RESOURCE, topic.name, {}, topic.configs)
        for index, partition in sorted(topic.partitions.items()):
            records.append(rec.partition(topic.topic_id, index, partition))
    if state.next_producer_id:
        records.append(rec.producer_ids(-1, -1, state.next_producer_id))
    for name in sorted(documents):
        if codec is None or name == FEATURES_DOCUMENT:
            continue
        records += [rec.written(change) for change in codec.records(name, None, documents[name])]
    return records


def state_records(shard: ClusterShard) -> list[Record]:
    return records_of(capture(shard))
