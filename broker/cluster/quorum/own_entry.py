"""What a controller does about its own place among the quorum's voters, as Kafka's do.

- Every voter tells each new leader its directory id, controller endpoints and the
  kraft.version range it supports (UpdateRaftVoter): with static voters
  (kraft.version 0) the leader keeps them in memory for an upgrade to dynamic voters;
  with dynamic ones it is sent only when the voter set holds other endpoints for it.
- `controller.quorum.auto.join.enable`: an observer of a dynamic quorum asks the leader
  to add it (AddRaftVoter), as `add-controller` would, until it is a voter.

Each request goes on a connection of its own: the leader answers an AddRaftVoter once
this node's fetches, on the quorum's shared connection, have the change, and they
would otherwise wait behind it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.cluster.quorum.quorum import FOLLOWER, Quorum
from odradek.broker.cluster.quorum.voters import VoterNode
from odradek.protocol.errors import ErrorCode

log = structlog.get_logger("controller")
EVERY_S = 1.0
TIMEOUT_S = 30.0
ADD_RAFT_VOTER, UPDATE_RAFT_VOTER = 80, 82


def _listeners(me: VoterNode) -> list[dict[str, Any]]:
    return [{"name": n, "host": h, "port": p} for n, h, p in me.endpoints]


async def _ask_leader(quorum: Quorum, api_key: int, version: int, request: Any) -> Any:
    client = quorum.peers.connect(quorum.leader_id, TIMEOUT_S)
    try:
        return await client.call(api_key, version, request)
    except NodeUnreachable:
        return None
    finally:
        client.close()


async def tell_each_leader(
    quorum_of: Callable[[], Quorum | None], cluster_id: str, me: VoterNode
) -> None:
    """UpdateRaftVoter to each new leader this voter follows (see above)."""
    told: tuple[int, int] | None = None
    while True:
        await asyncio.sleep(EVERY_S)
        quorum = quorum_of()
        if quorum is None or not quorum.is_voter or quorum.role != FOLLOWER:
            continue
        if quorum.leader_id < 0 or told == (quorum.leader_id, quorum.leader_epoch):
            continue
        listed = quorum.history.voters.nodes.get(me.node_id)
        if quorum.kraft_version >= 1 and listed is not None and listed.endpoints == me.endpoints:
            told = (quorum.leader_id, quorum.leader_epoch)
            continue
        request = {
            "cluster_id": cluster_id,
            "current_leader_epoch": quorum.leader_epoch,
            "voter_id": me.node_id,
            "voter_directory_id": me.directory_id,
            "listeners": _listeners(me),
            "k_raft_version_feature": {
                "min_supported_version": me.kraft_versions[0],
                "max_supported_version": me.kraft_versions[1],
            },
        }
        epoch = (quorum.leader_id, quorum.leader_epoch)
        answer = await _ask_leader(quorum, UPDATE_RAFT_VOTER, 0, request)
        if answer is not None and answer.error_code == ErrorCode.none:
            told = epoch


async def auto_join(quorum_of: Callable[[], Quorum | None], cluster_id: str, me: VoterNode) -> None:
    """controller.quorum.auto.join.enable (see above)."""
    request = {
        "cluster_id": cluster_id,
        "timeout": 30000,
        "voter_id": me.node_id,
        "voter_directory_id": me.directory_id,
        "listeners": _listeners(me),
        "ack_when_committed": True,
    }
    while True:
        await asyncio.sleep(EVERY_S)
        quorum = quorum_of()
        if quorum is None or quorum.kraft_version == 0 or quorum.is_voter:
            continue
        if quorum.leader_id < 0 or quorum.is_leader:
            continue
        answer = await _ask_leader(quorum, ADD_RAFT_VOTER, 1, request)
        if answer is not None and answer.error_code == ErrorCode.none:
            log.info("joined the quorum's voters", node_id=me.node_id)
