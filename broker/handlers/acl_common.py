"""What CreateAcls and DeleteAcls share: which store they change, or the answer they
give at once (no ALTER on the cluster, no authorizer, a cluster's controller away)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.controller_documents import ControllerAcls
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.acls import AclStore
from odradek.broker.security.authorizer import AclAuthorizer
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

Refusal = Callable[[ErrorCode, str], Reply]  # the answer with every item failed so


async def acl_store(
    ctx: RequestContext, api_key: int, request: Any, refuse: Refusal
) -> tuple[AclStore | ControllerAcls | None, Reply]:
    """(the store to change, None), or (None, the answer to give now). On a broker of a
    cluster the answer is the controller's, given once this broker follows it."""
    if ctx.listener.controller and ctx.services.controller is not None:
        return ctx.services.controller.acls, None  # a broker of the cluster checked the rest
    if not cluster_allowed(ctx, Operation.ALTER):
        return None, refuse(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    authorizer = ctx.services.authorizer
    if not isinstance(authorizer, AclAuthorizer):
        return None, refuse(ErrorCode.security_disabled, "No Authorizer is configured.")
    member = ctx.services.member
    if member is not None:
        try:
            return None, await through_controller(member, api_key, ctx.version, request)
        except NodeUnreachable as exc:
            return None, refuse(ErrorCode.request_timed_out, str(exc))
    return authorizer.store, None
