"""ElectLeaders (43), v0-v2.

- Preferred election (type 0): each partition's first replica leads again, if it is
  live and in sync (PREFERRED_LEADER_NOT_AVAILABLE otherwise); ELECTION_NOT_NEEDED
  when it already leads. Unclean election (type 1): only a partition without a leader
  gets one, any live replica (ELECTION_NOT_NEEDED for the others).
- topic_partitions null: every partition. Unknown ones: UNKNOWN_TOPIC_OR_PARTITION.
- In a cluster the controller decides (the request goes to it as it came); on one node
  of its own the node leads everything: ELECTION_NOT_NEEDED throughout.
- With ACLs the caller needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
ELECT_LEADERS = 43


def wanted_partitions(ctx: RequestContext, request: Any) -> list[tuple[str, list[int]]]:
    if request.topic_partitions is None:
        return [(t.name, [p.index for p in t.partitions]) for t in ctx.services.topics]
    return [(t.topic, list(t.partitions)) for t in request.topic_partitions]


Results = dict[str, list[tuple[int, int, str | None]]]  # topic -> (index, code, message)


def answer(code: int, results: Results) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "replica_election_results": [
            {
                "topic": topic,
                "partition_result": [
                    {"partition_id": index, "error_code": error, "error_message": message}
                    for index, error, message in partitions
                ],
            }
            for topic, partitions in results.items()
        ],
    }


def _all_failed(code: int, message: str | None, wanted: list[tuple[str, list[int]]]) -> Reply:
    return answer(code, {t: [(i, code, message) for i in p] for t, p in wanted})


async def handle(ctx: RequestContext, request: Any) -> Reply:
    wanted = wanted_partitions(ctx, request)
    if not cluster_allowed(ctx, Operation.ALTER):
        return _all_failed(ErrorCode.cluster_authorization_failed, None, wanted)
    member = ctx.services.member
    if member is None:
        results: Results = {}
        for topic, indexes in wanted:
            for index in indexes:
                known = ctx.services.topics.partition(topic, index) is not None
                code = (
                    ErrorCode.election_not_needed if known else ErrorCode.unknown_topic_or_partition
                )
                results.setdefault(topic, []).append((index, code, None))
        return answer(ErrorCode.none, results)
    forwarded = {
        "election_type": getattr(request, "election_type", 0),
        "topic_partitions": [{"topic": t, "partitions": p} for t, p in wanted],
        "timeout": 30000,
    }
    try:
        reply = await member.ask_controller(ELECT_LEADERS, 2, forwarded)
    except NodeUnreachable as exc:
        return _all_failed(ErrorCode.request_timed_out, str(exc), wanted)
    return answer(
        reply.error_code,
        {
            r.topic: [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result]
            for r in reply.replica_election_results
        },
    )
