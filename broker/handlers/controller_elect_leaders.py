"""ElectLeaders (43), v0-v2, on the controller listener (v0: preferred leaders only): a
broker of the cluster passes on its client's request; each partition's election is one
operation on the cluster's metadata (see coordinator/cluster/shard.py: elect_leader)."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.elect_leaders.v2.request import ElectLeadersRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.handlers.elect_leaders import Results, answer
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
# the fields read are in every version but election_type (v1+): typed as the newest


def _elect(shard: Any, topic: str, index: int, unclean: bool) -> Any:
    return shard.elect_leader(topic, index, unclean)


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> Reply:
    unclean = getattr(request, "election_type", 0) == 1
    results: Results = {}
    for entry in request.topic_partitions or ():
        for index in entry.partitions:
            outcome = await answered_by_controller(
                ctx, partial(_elect, topic=entry.topic, index=index, unclean=unclean)
            )
            code = outcome["error_code"]
            message = outcome.get("error_message")
            results.setdefault(entry.topic, []).append((index, code, message))
    return answer(ErrorCode.none, results)
