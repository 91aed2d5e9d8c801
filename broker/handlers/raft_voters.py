"""AddRaftVoter (80, v0-v1), RemoveRaftVoter (81, v0) and UpdateRaftVoter (82, v0): changes
to the quorum's voters (KIP-853), as `kafka-metadata-quorum add-controller` and
`remove-controller` send them.

The leader checks, in Kafka's order and words:
- a request for another cluster: INCONSISTENT_CLUSTER_ID;
- a controller that does not lead: NOT_LEADER_OR_FOLLOWER;
- AddRaftVoter without the new voter's directory id, or without an endpoint on the
  controller listener: INVALID_REQUEST;
- a leader whose epoch has not committed yet: REQUEST_TIMED_OUT;
then the change itself (broker/cluster/quorum/voter_changes.py): static voters
(`controller.quorum.voters`, kraft.version 0) refuse it with UNSUPPORTED_VERSION;
dynamic voters (`controller.quorum.bootstrap.servers`, kraft.version 1) change.
On a broker's listener (a broker of a cluster) AddRaftVoter and RemoveRaftVoter go on to
the active controller, as Kafka's brokers pass them on.
"""

from __future__ import annotations

from typing import Any

from kio.schema.add_raft_voter.v0.request import AddRaftVoterRequest as AddV0
from kio.schema.add_raft_voter.v1.request import AddRaftVoterRequest as AddV1
from kio.schema.remove_raft_voter.v0.request import RemoveRaftVoterRequest
from kio.schema.update_raft_voter.v0.request import UpdateRaftVoterRequest

from odradek.broker.cluster.admin import as_dict
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.cluster.quorum.voters import NO_DIRECTORY, VoterNode
from odradek.broker.handlers.authorization import acls_enabled, cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

ADD, REMOVE = 80, 81


def _answer(code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "error_message": message}


def _endpoints(request: AddV0 | AddV1 | UpdateRaftVoterRequest) -> tuple[tuple[str, str, int], ...]:
    """The voter's listeners, as a voter set keeps its endpoints."""
    return tuple((lis.name, lis.host, int(lis.port)) for lis in request.listeners)


def _quorum_refusal(ctx: RequestContext, cluster_id: str | None) -> dict[str, Any] | None:
    """What every voter change is refused with before its own checks, if anything."""
    if acls_enabled(ctx) and not cluster_allowed(ctx, Operation.ALTER):
        return _answer(ErrorCode.cluster_authorization_failed)
    controller = ctx.services.controller
    quorum = controller.quorum if controller is not None else None
    if quorum is None:
        return _answer(ErrorCode.not_controller)
    if cluster_id is not None and cluster_id != quorum.cluster_id:
        return _answer(
            ErrorCode.inconsistent_cluster_id,
            f'The given id "{cluster_id}" doesn\'t match the cluster id "{quorum.cluster_id}"',
        )
    if not quorum.is_leader:
        return _answer(ErrorCode.not_leader_or_follower)
    if quorum.high_watermark <= quorum.epoch_start:
        return _answer(
            ErrorCode.request_timed_out,
            "Request timed out waiting for leader to establish HWM and fence previous "
            "voter changes",
        )
    return None


async def _passed_on(ctx: RequestContext, api_key: int, request: Any) -> Reply | None:
    member = ctx.services.member
    if ctx.listener.controller or member is None:
        return None
    try:
        return as_dict(await member.ask_controller(api_key, ctx.version, as_dict(request)))
    except NodeUnreachable:
        return _answer(ErrorCode.request_timed_out)


async def handle_add(ctx: RequestContext, request: AddV0 | AddV1) -> Reply:
    passed = await _passed_on(ctx, ADD, request)
    if passed is not None:
        return passed
    refused = _quorum_refusal(ctx, request.cluster_id)
    if refused is not None:
        return refused
    if request.voter_directory_id in (None, NO_DIRECTORY):
        return _answer(ErrorCode.invalid_request, "Add voter request didn't include a valid voter")
    names = {listener.name for listener in ctx.services.listeners if listener.controller}
    if not any(listener.name in names for listener in request.listeners):
        return _answer(
            ErrorCode.invalid_request,
            "Add voter request didn't include the endpoint for the default listener "
            f"{min(names, default='CONTROLLER')}",
        )
    controller = ctx.services.controller
    assert controller is not None and controller.voter_changes is not None
    node = VoterNode(int(request.voter_id), request.voter_directory_id, _endpoints(request))
    code, message = await controller.voter_changes.add(
        node,
        controller.observers.get(node.node_id),
        getattr(request, "ack_when_committed", True),
    )
    return _answer(code, message)


async def handle_remove(ctx: RequestContext, request: RemoveRaftVoterRequest) -> Reply:
    passed = await _passed_on(ctx, REMOVE, request)
    if passed is not None:
        return passed
    refused = _quorum_refusal(ctx, request.cluster_id)
    if refused is not None:
        return refused
    controller = ctx.services.controller
    assert controller is not None and controller.voter_changes is not None
    code, message = await controller.voter_changes.remove(
        int(request.voter_id), request.voter_directory_id
    )
    return _answer(code, message)


async def handle_update(ctx: RequestContext, request: UpdateRaftVoterRequest) -> Reply:
    refused = _quorum_refusal(ctx, request.cluster_id)
    controller = ctx.services.controller
    quorum = controller.quorum if controller is not None else None
    if isinstance(refused, dict):
        code: ErrorCode = refused["error_code"]
    else:
        assert controller is not None and controller.voter_changes is not None
        node = VoterNode(
            int(request.voter_id),
            request.voter_directory_id or NO_DIRECTORY,
            _endpoints(request),
            (
                int(request.k_raft_version_feature.min_supported_version),
                int(request.k_raft_version_feature.max_supported_version),
            ),
        )
        code = controller.voter_changes.update(node)
    leader = -1 if quorum is None else quorum.leader_id
    host, port = ("", -1)
    if quorum is not None and leader in quorum.voters:
        host, port = quorum.voters[leader]
    return {
        "throttle_time": 0,
        "error_code": code,
        "current_leader": {
            "leader_id": leader,
            "leader_epoch": -1 if quorum is None else quorum.leader_epoch,
            "host": host,
            "port": port,
        },
    }
