"""WriteTxnMarkers (27), v1.

Sent by a transaction coordinator to partition leaders; here the coordinator
writes its markers in-process, but the API serves tools and tests: each
marker is appended to the named partitions (UNKNOWN_TOPIC_OR_PARTITION for
unknown ones).
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext

MIN_VERSION, MAX_VERSION = 1, 1


async def handle(ctx: RequestContext, request: Any) -> Reply:
    markers = []
    for marker in request.markers:
        partitions = {(t.name, p) for t in marker.topics for p in t.partition_indexes}
        codes = await ctx.broker.transactions.write_markers(
            marker.producer_id, marker.producer_epoch, marker.transaction_result, partitions
        )
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
