"""A snapshot of the cluster's metadata (coordinator/cluster/snapshot.py): the records
of the whole state, which replayed alone into a fresh shard give the same brokers,
topics, partitions, producer ids and documents; and every document change is written
as Kafka's records of its difference, replayed by every view to the same document."""

from __future__ import annotations

import uuid
from typing import Any

from test_cluster_shard import Harness

from odradek.broker.cluster import throttles
from odradek.broker.cluster.controller_documents import (
    ACLS,
    CLIENT_METRICS,
    FEATURES,
    GROUP_CONFIGS,
    QUOTAS,
    SCRAM,
    TOKENS,
)
from odradek.broker.cluster.metadata_documents import MetadataDocuments
from odradek.broker.security import acls, credentials, delegation_tokens
from odradek.broker.security.resources import Operation, PatternType, Permission, ResourceType
from odradek.broker.security.scram import ScramCredential
from odradek.broker.settings import client_quotas, named_configs
from odradek.broker.settings.features import FinalizedFeatures
from odradek.coordinator.cluster.shard import ClusterSettings, ClusterShard
from odradek.coordinator.cluster.snapshot import state_records

BINDING = acls.AclBinding(
    ResourceType.TOPIC,
    "orders",
    PatternType.LITERAL,
    "User:alice",
    "*",
    Operation.READ,
    Permission.ALLOW,
)
TOKEN = delegation_tokens.Token("tok1", "User:a", "User:a", ("User:b",), 1, 2, 3)


def decoded(documents: dict[str, bytes]) -> dict[str, Any]:
    return {
        ACLS: acls.decode_document(documents.get(ACLS)),
        SCRAM: credentials.decode_document(documents.get(SCRAM)),
        QUOTAS: client_quotas.decode_document(documents.get(QUOTAS)),
        FEATURES: dict(FinalizedFeatures.decode(documents.get(FEATURES)).levels),
        TOKENS: delegation_tokens.decode_document(documents.get(TOKENS)),
        GROUP_CONFIGS: named_configs.with_configs(documents.get(GROUP_CONFIGS), "-", {}),
        CLIENT_METRICS: named_configs.with_configs(documents.get(CLIENT_METRICS), "-", {}),
        throttles.DOCUMENT: throttles.decode_document(documents.get(throttles.DOCUMENT)),
    }


def put(h: Harness, name: str, document: bytes) -> None:
    h.apply(h.shard.put_document(name, document, None))


def a_busy_cluster() -> Harness:
    h = Harness()
    h.shard = ClusterShard(None, ClusterSettings("c1", 9000), MetadataDocuments())
    h.start(1, 2, 3)
    h.create("t", 3, 2)
    h.apply(h.shard.alter_topic_configs("t", {"retention.ms": "1000"}))
    h.apply(h.shard.allocate_producer_ids(1, h.epochs[1]))
    h.beat(3, want_shutdown=True)
    put(h, ACLS, acls.encode_document({BINDING}))
    credential = ScramCredential(b"salt", b"stored", b"server", 4096)
    put(h, SCRAM, credentials.encode_document({"alice": {"SCRAM-SHA-256": credential}}))
    quotas = {
        (("user", "alice"),): {"producer_byte_rate": 1024.0},
        (("user", None),): {"consumer_byte_rate": 5.0},
    }
    put(h, QUOTAS, client_quotas.encode_document(quotas))
    put(
        h,
        FEATURES,
        FinalizedFeatures({"metadata.version": 33, "transaction.version": 2}, 7).encode(),
    )
    put(h, TOKENS, delegation_tokens.encode_document({TOKEN.token_id: TOKEN}))
    put(
        h,
        GROUP_CONFIGS,
        named_configs.with_configs(None, "g1", {"consumer.session.timeout.ms": "50000"}),
    )
    put(h, CLIENT_METRICS, named_configs.with_configs(None, "cpu", {"interval.ms": "1000"}))
    put(h, throttles.DOCUMENT, throttles.encode_document({2: {throttles.LEADER_RATE: "100"}}))
    return h


def state(shard: ClusterShard) -> Any:
    brokers = {n: r.value for n, r in shard.brokers.items()}
    topics = {n: (t.topic_id, t.configs, t.partitions) for n, t in shard.topics.items()}
    return brokers, topics, shard.next_producer_id, decoded(shard.documents)


def test_every_view_replays_document_changes_to_the_same_documents() -> None:
    h = a_busy_cluster()
    assert all(key is None for key, _ in h.log)
    view = ClusterShard(None, ClusterSettings("c1", 9000), MetadataDocuments())
    for offset, (key, value) in enumerate(h.log):
        view.replay(offset, key, value, -1)
    assert state(view) == state(h.shard)
    assert decoded(view.documents)[ACLS] == {BINDING}
    # changes write only their difference, and removals
    before = len(h.log)
    put(h, ACLS, acls.encode_document(set()))
    put(h, TOKENS, delegation_tokens.encode_document({}))
    put(h, QUOTAS, client_quotas.encode_document({(("user", None),): {"consumer_byte_rate": 5.0}}))
    assert len(h.log) - before == 3
    for offset in range(before, len(h.log)):
        view.replay(offset, *h.log[offset], -1)
    assert state(view) == state(h.shard)
    assert decoded(view.documents)[ACLS] == frozenset() and decoded(view.documents)[TOKENS] == {}


def test_a_snapshot_replayed_alone_gives_the_same_state() -> None:
    h = a_busy_cluster()
    records = state_records(h.shard)
    fresh = ClusterShard(None, ClusterSettings("c1", 9000), MetadataDocuments())
    for offset, (key, value) in enumerate(records):
        assert key is None
        fresh.replay(offset, key, value, -1)
    assert state(fresh) == state(h.shard)
    assert fresh.brokers[3].value.fenced and not fresh.brokers[1].value.fenced
    assert uuid.UUID(int=0) not in fresh.topic_names
