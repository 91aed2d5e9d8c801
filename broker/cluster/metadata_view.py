"""A node's own view of the cluster's metadata, replayed from the metadata log: a
broker's (member.py) and a controller's that does not lead (follower_view.py). The
node adopts the view's documents (feature levels, ACLs, credentials, quotas, ...) as
they change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from odradek.broker.cluster.metadata_documents import MetadataDocuments
from odradek.coordinator.cluster.shard import ClusterSettings, ClusterShard


class AdoptsDocuments(Protocol):
    def adopt_document(self, name: str, document: bytes) -> None: ...


def new_view(cluster_id: str) -> ClusterShard:
    """An empty view, to replay the log (or a snapshot) into."""
    return ClusterShard(None, ClusterSettings(cluster_id=cluster_id), MetadataDocuments())


class AdoptedDocuments:
    """The view's documents its node adopted so far."""

    def __init__(self, node: AdoptsDocuments) -> None:
        self._node = node
        self._adopted: dict[str, bytes] = {}

    def follow(self, documents: Mapping[str, bytes]) -> None:
        """Adopt each document that changed since the last time."""
        for name, document in documents.items():
            if self._adopted.get(name) != document:
                self._adopted[name] = document
                self._node.adopt_document(name, document)
