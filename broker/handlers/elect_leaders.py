"""ElectLeaders (43), v0-v2.

- Preferred election (type 0): each partition's first replica leads again, if it is
  live and in sync (PREFERRED_LEADER_NOT_AVAILABLE otherwise); ELECTION_NOT_NEEDED
  when it already leads. Unclean election (type 1): only a partition without a leader
  gets one, any live replica (ELECTION_NOT_NEEDED for the others).
- topic_partitions null: every partition, and (as Kafka) the answer lists each topic
  with only the partitions that needed an election. Unknown ones:
  UNKNOWN_TOPIC_OR_PARTITION ("No such topic as ...", "No such partition as ...").
- An election type that is neither is INVALID_REQUEST for the whole request.
- In a cluster the controller decides (the request goes to it as it came); on one node
  of its own the node leads everything: ELECTION_NOT_NEEDED throughout.
- With ACLs the caller needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any, cast

from kio.schema.elect_leaders.v0.request import ElectLeadersRequest as RequestV0
from kio.schema.elect_leaders.v1.request import ElectLeadersRequest as RequestV1
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest as RequestV2

from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import cluster_allowed, needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 0, 2
ELECT_LEADERS = 43
PREFERRED, UNCLEAN = 0, 1

Request = RequestV0 | RequestV1 | RequestV2


def wanted_partitions(ctx: RequestContext, request: Request) -> list[tuple[str, list[int]]]:
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


def _single_node_outcome(ctx: RequestContext, topic: str, index: int) -> tuple[int, str]:
    """One node of its own leads every partition already."""
    if ctx.services.topics.get(topic) is None:
        return ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}"
    if ctx.services.topics.partition(topic, index) is None:
        return ErrorCode.unknown_topic_or_partition, f"No such partition as {topic}-{index}"
    code = ErrorCode.election_not_needed
    return code, default_message(code) or ""


def _without_unneeded(results: Results) -> Results:
    """As Kafka answers an election of every partition: each topic, but only the
    partitions that needed one."""
    return {
        topic: [p for p in partitions if p[1] != ErrorCode.election_not_needed]
        for topic, partitions in results.items()
    }


async def handle(ctx: RequestContext, request: Request) -> Reply:
    wanted = wanted_partitions(ctx, request)
    # v0 has no election type: a preferred election
    election = cast(RequestV1, request).election_type if ctx.version >= 1 else PREFERRED
    if election not in (PREFERRED, UNCLEAN):
        invalid = ErrorCode.invalid_request
        return _all_failed(invalid, f"Unknown election type {election}", wanted)
    if not cluster_allowed(ctx, Operation.ALTER):
        message = needs_permission(ctx, "ElectLeaders", Operation.ALTER)
        return _all_failed(ErrorCode.cluster_authorization_failed, message, wanted)
    member = ctx.services.member
    every_partition = request.topic_partitions is None
    if member is None:
        results: Results = {}
        for topic, indexes in wanted:
            results[topic] = [(i, *_single_node_outcome(ctx, topic, i)) for i in indexes]
        return answer(ErrorCode.none, _without_unneeded(results) if every_partition else results)
    forwarded = {
        "election_type": election,
        "topic_partitions": [{"topic": t, "partitions": p} for t, p in wanted],
        "timeout": 30000,
    }
    try:
        reply = await member.ask_controller(ELECT_LEADERS, 2, forwarded)
    except NodeUnreachable as exc:
        return _all_failed(ErrorCode.request_timed_out, str(exc), wanted)
    results = {
        r.topic: [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result]
        for r in reply.replica_election_results
    }
    return answer(reply.error_code, _without_unneeded(results) if every_partition else results)
