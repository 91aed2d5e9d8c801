"""DescribeQuorum (55), v0-v2: the metadata quorum as `kafka-metadata-quorum.sh` shows it.

- Answered by the quorum's leader: its epoch and high watermark, every voter with the
  log end it last fetched from and when (the leader: its own log end, now), and the
  brokers as observers, with the metadata offset each last reported and when.
- Another controller answers NOT_LEADER_OR_FOLLOWER, as on Kafka; any other topic or
  partition UNKNOWN_TOPIC_OR_PARTITION; a node that is no controller NOT_CONTROLLER.
- v2 adds the voters' controller listeners (`nodes`).
- Asked on a broker's listener (a broker of a cluster), the broker passes the request on
  to the active controller and returns its answer, as Kafka's brokers do.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest

from odradek.broker.cluster.admin import as_dict
from odradek.broker.cluster.controller import METADATA_TOPIC, Controller
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.cluster.quorum.quorum import Quorum
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
API_KEY = 55
# v0-v2 have the same fields: typed as the newest


def _replica(
    node_id: int, log_end_offset: int, seen_ms: int, directory_id: uuid.UUID | None = None
) -> dict[str, Any]:
    return {
        "replica_id": node_id,
        "replica_directory_id": directory_id,
        "log_end_offset": log_end_offset,
        "last_fetch_timestamp": seen_ms,
        "last_caught_up_timestamp": seen_ms,
    }


async def handle(ctx: RequestContext, request: DescribeQuorumRequest) -> Reply:
    member = ctx.services.member
    if not ctx.listener.controller and member is not None:
        try:
            return as_dict(await member.ask_controller(API_KEY, ctx.version, as_dict(request)))
        except NodeUnreachable:
            return {"error_code": ErrorCode.not_controller, "topics": [], "nodes": []}
    controller = ctx.services.controller
    if controller is None or controller.quorum is None:
        return {"error_code": ErrorCode.not_controller, "topics": [], "nodes": []}
    quorum = controller.quorum
    now_ms = int(time.time() * 1000)
    topics = []
    for topic in request.topics:
        partitions: list[dict[str, Any]] = []
        for partition in topic.partitions:
            index = partition.partition_index
            if topic.topic_name != METADATA_TOPIC or index != 0:
                code = ErrorCode.unknown_topic_or_partition
            elif not quorum.is_leader:
                code = ErrorCode.not_leader_or_follower
            else:
                partitions.append(_leader_view(controller, now_ms))
                continue
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": code,
                    "current_voters": [],
                    "observers": [],
                }
            )
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    return {"error_code": 0, "topics": topics, "nodes": _nodes(ctx, quorum)}


def _leader_view(controller: Controller, now_ms: int) -> dict[str, Any]:
    quorum = controller.quorum
    assert quorum is not None
    own_end = quorum.partition.log.log_end_offset
    voters = []
    nodes = quorum.history.voters.nodes
    for voter in sorted(nodes):
        directory = nodes[voter].directory_id if quorum.kraft_version else None
        if voter == quorum.node_id:
            voters.append(_replica(voter, own_end, now_ms, directory))
        else:
            seen = quorum.voter_seen_ms.get(voter, -1)
            voters.append(_replica(voter, quorum.voter_ends.get(voter, -1), seen, directory))
    return {
        "partition_index": 0,
        "error_code": 0,
        "leader_id": quorum.node_id,
        "leader_epoch": quorum.leader_epoch,
        "high_watermark": quorum.high_watermark,
        "current_voters": voters,
        "observers": [
            _replica(node_id, seen.log_end_offset, seen.last_seen_ms)
            for node_id, seen in sorted(controller.observers.items())
            if node_id not in quorum.voters
        ],
    }


def _nodes(ctx: RequestContext, quorum: Quorum) -> list[dict[str, Any]]:
    """Each voter's controller listener: this node's as it advertises them, the others'
    as controller.quorum.voters or the voter set names them."""
    own = [
        {"name": listener.name, "host": listener.advertised_host, "port": listener.advertised_port}
        for listener in ctx.services.listeners
        if listener.controller
    ]
    name = own[0]["name"] if own else "CONTROLLER"
    nodes = []
    for voter, node in sorted(quorum.history.voters.nodes.items()):
        listeners = [{"name": n, "host": host, "port": port} for n, host, port in node.endpoints]
        if voter == quorum.node_id:
            listeners = own
        elif not listeners:
            host, port = node.address()
            listeners = [{"name": name, "host": host, "port": port}]
        nodes.append({"node_id": voter, "listeners": listeners})
    return nodes
