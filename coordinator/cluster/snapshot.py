"""The whole of a cluster's metadata as records, in the order Kafka's controller writes
a snapshot: features first, then brokers, topics with their configs and partitions,
producer ids, and the rest of the documents. A shard that replays them alone ends in
the state of the shard they were taken from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.coordinator.cluster import records as rec
from odradek.coordinator.runtime import Record

if TYPE_CHECKING:
    from odradek.coordinator.cluster.shard import ClusterShard

FEATURES_DOCUMENT = "features"  # broker/cluster/controller_documents.FEATURES


def state_records(shard: ClusterShard) -> list[Record]:
    records: list[Record] = []
    documents = shard.metadata_documents
    if documents is not None and FEATURES_DOCUMENT in shard.documents:
        changes = documents.records(FEATURES_DOCUMENT, None, shard.documents[FEATURES_DOCUMENT])
        records += [rec.written(change) for change in changes]
    for node_id, controller in sorted(shard.controllers.items()):
        records.append(rec.register_controller(node_id, controller))
    for node_id, registration in sorted(shard.brokers.items()):
        records.append(rec.register_broker(node_id, registration.value))
    for name, state in sorted(shard.topics.items()):
        records.append(rec.topic(name, state.topic_id))
        records += rec.config_changes(rec.TOPIC_RESOURCE, name, {}, state.configs)
        for index, partition in sorted(state.partitions.items()):
            records.append(rec.partition(state.topic_id, index, partition))
    if shard.next_producer_id:
        records.append(rec.producer_ids(-1, -1, shard.next_producer_id))
    for name in sorted(shard.documents):
        if documents is None or name == FEATURES_DOCUMENT:
            continue
        changes = documents.records(name, None, shard.documents[name])
        records += [rec.written(change) for change in changes]
    return records
