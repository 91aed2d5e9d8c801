"""Odradek reads the metadata log Kafka 4.4's own controller writes: every record of the
session's Kafka 4.4 node decodes, and replayed into Odradek's view of a cluster it
gives the brokers, topics, partitions and configs Kafka itself reports."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from helpers.reference_kafka import ReferenceKafka

from odradek.broker.cluster.controller_documents import FEATURES
from odradek.broker.cluster.metadata_documents import MetadataDocuments
from odradek.broker.settings.features import METADATA_VERSION, FinalizedFeatures
from odradek.coordinator.cluster import kafka_format as kf
from odradek.coordinator.cluster.shard import ClusterSettings, ClusterShard
from odradek.protocol.batch import iter_batches, iter_records


def replay_log(directory: Path) -> tuple[ClusterShard, list[kf.MetadataRecord]]:
    shard = ClusterShard(None, ClusterSettings(), MetadataDocuments())
    decoded = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        for header in iter_batches(data, check_crc=True):
            if header.is_control:
                continue
            body = data[header.position : header.position + header.size]
            for delta, key, value in iter_records(body):
                assert key is None and value is not None
                decoded.append(kf.decode(value))
                shard.replay(header.base_offset + delta, key, value, -1)
    return shard, decoded


def test_odradek_replays_kafkas_own_metadata_log(kafka44: ReferenceKafka) -> None:
    admin = AdminClient({"bootstrap.servers": kafka44.bootstrap})
    topic = NewTopic("read-by-odradek", 3, 1, config={"retention.ms": "123456"})
    for future in admin.create_topics([topic]).values():
        future.result(30)
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic.topic)])
    kafka_configs = {
        name: entry.value
        for resource in described.values()
        for name, entry in resource.result(30).items()
        if ConfigSource(entry.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG
    }
    listed = admin.list_topics(timeout=30).topics
    time.sleep(1)  # Kafka's controller has written the topic to its log

    shard, decoded = replay_log(kafka44.base / "data" / "__cluster_metadata-0")

    known = [r for r in decoded if r.api_key in kf.SCHEMAS]
    assert len(known) > 0
    assert set(shard.topics) >= {topic.topic}
    state = shard.topics[topic.topic]
    assert sorted(state.partitions) == [0, 1, 2]
    assert state.configs == kafka_configs == {"retention.ms": "123456"}
    for index, partition in state.partitions.items():
        kafka_partition = listed[topic.topic].partitions[index]
        assert partition.leader == kafka_partition.leader == 0
        assert list(partition.replicas) == kafka_partition.replicas
        assert list(partition.isr) == kafka_partition.isrs
    for name, metadata in listed.items():
        assert name in shard.topics, name
        assert sorted(shard.topics[name].partitions) == sorted(metadata.partitions)
    broker = shard.brokers[0].value
    assert not broker.fenced
    assert {(e.host, e.port) for e in broker.endpoints} >= {("127.0.0.1", kafka44.port)}
    features = FinalizedFeatures.decode(shard.documents.get(FEATURES))
    assert features.level(METADATA_VERSION) > 0
