"""WriteTxnMarkers (27), v1-v2 (v2 names the transaction version of each marker,
which changes nothing here, as on Kafka 4.4).

Sent by a transaction coordinator to partition leaders: on one node of its own
the coordinator writes its markers in-process and the API serves tools and tests;
in a cluster a coordinator sends the markers of partitions led elsewhere to their
leaders. Each marker is appended to the named partitions (UNKNOWN_TOPIC_OR_PARTITION
for unknown ones, NOT_LEADER_OR_FOLLOWER where this node does not lead,
UNKNOWN_SERVER_ERROR, as Kafka, where its epoch is older than the producer's, and
TRANSACTION_COORDINATOR_FENCED where its coordinator epoch is older than that of the
producer's last marker), once every in-sync replica has it. With ACLs the caller needs
ALTER or CLUSTER_ACTION on the cluster: every partition answers
CLUSTER_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from kio.schema.write_txn_markers.v2.request import WritableTxnMarker, WriteTxnMarkersRequest

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 2
# the fields read are those of v1: typed as the newest


async def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> Reply:
    allowed = cluster_allowed(ctx, Operation.ALTER) or cluster_allowed(
        ctx, Operation.CLUSTER_ACTION
    )
    markers = []
    for marker in request.markers:
        partitions: set[tuple[str, int]] = {
            (t.name, p) for t in marker.topics for p in t.partition_indexes
        }
        if allowed:
            refused = {
                tp: code for tp in partitions if (code := _refusal(ctx, tp, marker)) is not None
            }
            codes = await ctx.services.transactions.write_markers(
                marker.producer_id,
                marker.producer_epoch,
                marker.transaction_result,
                partitions - set(refused),
                forward=False,
            )
            codes.update(refused)
        else:
            codes = {tp: ErrorCode.cluster_authorization_failed for tp in partitions}
        markers.append(
            {
                "producer_id": marker.producer_id,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {"partition_index": p, "error_code": codes[(t.name, p)]}
                            for p in t.partition_indexes
                        ],
                    }
                    for t in marker.topics
                ],
            }
        )
    return {"markers": markers}


def _refusal(ctx: RequestContext, tp: tuple[str, int], marker: WritableTxnMarker) -> int | None:
    """Why Kafka's append of the marker fails on the partition, if it does: an epoch
    older than the producer's last there (UNKNOWN_SERVER_ERROR, as Kafka answers it),
    or a coordinator epoch older than that of the producer's last marker."""
    partition = ctx.services.topics.partition(*tp)
    if partition is None or not partition.led_here:
        return None
    entry = partition.producers.producers.get(marker.producer_id)
    if entry is None:
        return None
    if marker.producer_epoch < entry.epoch:
        return ErrorCode.unknown_server_error
    if marker.coordinator_epoch < entry.coordinator_epoch:
        return ErrorCode.transaction_coordinator_fenced
    return None
