"""What the ACL APIs share: the request Kafka refuses as it parses it, and, for
CreateAcls and DeleteAcls, which store they change, or the answer they give at once
(no ALTER on the cluster, no authorizer, a cluster's controller away)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.describe_acls.v3.request import DescribeAclsRequest

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.controller_documents import ControllerAcls
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import cluster_allowed, needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.acls import AclStore
from odradek.broker.security.authorizer import AclAuthorizer
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode
from odradek.protocol.header import FrameError

API_NAMES = {30: "CreateAcls", 31: "DeleteAcls"}
Refusal = Callable[[ErrorCode, str], Reply]  # the answer with every item failed so
# (the ACL APIs' versions 1-3 have the same fields: typed as the newest)
AclFields = AclCreation | DeleteAclsFilter | DescribeAclsRequest


def refuse_unknown_codes(api_name: str, fields: Iterable[AclFields]) -> None:
    """Closes the connection (FrameError) when a binding or filter carries the UNKNOWN
    code (0) as its resource type, pattern type, operation or permission, as Kafka's
    request classes refuse such a request before anything else. (Other codes Kafka does
    not know are answered: see AclFilter.problem and creation_problem.)"""
    for item in fields:
        codes = (
            getattr(item, "resource_type", None),
            getattr(item, "resource_type_filter", None),
            getattr(item, "resource_pattern_type", None),
            getattr(item, "pattern_type_filter", None),
            item.operation,
            item.permission_type,
        )
        if 0 in codes:
            raise FrameError(
                f"{api_name} with an UNKNOWN resource, pattern, operation or permission"
            )


async def acl_store(
    ctx: RequestContext,
    api_key: int,
    request: CreateAclsRequest | DeleteAclsRequest,
    refuse: Refusal,
) -> tuple[AclStore | ControllerAcls | None, Reply]:
    """(the store to change, None), or (None, the answer to give now). On a broker of a
    cluster the answer is the controller's, given once this broker follows it."""
    if ctx.listener.controller and ctx.services.controller is not None:
        return ctx.services.controller.acls, None  # a broker of the cluster checked the rest
    if not cluster_allowed(ctx, Operation.ALTER):
        message = needs_permission(ctx, API_NAMES[api_key], Operation.ALTER)
        return None, refuse(ErrorCode.cluster_authorization_failed, message)
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
