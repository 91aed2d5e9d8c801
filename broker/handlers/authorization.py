"""The authorization checks the handlers share, after Kafka's KafkaApis / AuthHelper.

Handlers ask `ctx.allowed(operation, resource type, name)`; these helpers cover what
recurs: a set of names at once, the cluster, idempotent writes, and the
`authorized_operations` bit fields. Without an authorizer configured every check
passes, and `acls_enabled` lets the hot paths (Produce, Fetch) skip the checks.
"""

from __future__ import annotations

from collections.abc import Iterable

from odradek.broker.handlers.base import RequestContext
from odradek.broker.security.acls import SUPPORTED_OPERATIONS
from odradek.broker.security.authorizer import AllowEverything
from odradek.broker.security.resources import CLUSTER_NAME, Operation, ResourceType
from odradek.protocol.errors import ErrorCode

# what an `authorized_operations` field holds when the client did not ask for it
NOT_REQUESTED = -2147483648

# config resource types (DescribeConfigs, AlterConfigs): what authorizes them
_CONFIG_RESOURCES = {
    2: (ResourceType.TOPIC, ErrorCode.topic_authorization_failed),  # TOPIC
    4: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed),  # BROKER
    8: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed),  # BROKER_LOGGER
    16: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed),  # CLIENT_METRICS
    32: (ResourceType.GROUP, ErrorCode.group_authorization_failed),  # GROUP
}


def acls_enabled(ctx: RequestContext) -> bool:
    return not isinstance(ctx.services.authorizer, AllowEverything)


def cluster_allowed(ctx: RequestContext, operation: Operation) -> bool:
    return ctx.allowed(operation, ResourceType.CLUSTER, CLUSTER_NAME)


def allowed_names(
    ctx: RequestContext, operation: Operation, resource_type: ResourceType, names: Iterable[str]
) -> set[str]:
    """The names among `names` on which the principal may do `operation`."""
    if not acls_enabled(ctx):
        return set(names)
    return {name for name in set(names) if ctx.allowed(operation, resource_type, name)}


def needs_permission(ctx: RequestContext, api_name: str, operation: Operation) -> str:
    """Kafka's message where it refuses an ACL or SCRAM request for want of a cluster
    permission (its AuthHelper.authorizeClusterOperation): the request, as the broker
    describes it, then the operation."""
    header = ctx.header
    return (
        f"Request {api_name}(apiVersion={header.api_version}, clientId={header.client_id}, "
        f"correlationId={header.correlation_id}, principal={ctx.session.principal}) "
        f"needs {operation.name} permission."
    )


def may_create_topic(ctx: RequestContext, name: str) -> bool:
    return cluster_allowed(ctx, Operation.CREATE) or ctx.allowed(
        Operation.CREATE, ResourceType.TOPIC, name
    )


def may_write_idempotently(ctx: RequestContext) -> bool:
    """IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679)."""
    return cluster_allowed(
        ctx, Operation.IDEMPOTENT_WRITE
    ) or ctx.services.authorizer.authorize_any(ctx.session, Operation.WRITE, ResourceType.TOPIC)


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The bit field of the operations the principal may do on the resource."""
    bits = 0
    for operation in SUPPORTED_OPERATIONS[resource_type]:
        if ctx.allowed(operation, resource_type, name):
            bits |= 1 << operation
    return bits


def cluster_authorized_operations(ctx: RequestContext) -> int:
    """As Kafka answers for the cluster: nothing at all without DESCRIBE on it."""
    if not cluster_allowed(ctx, Operation.DESCRIBE):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def config_resource_refusal(
    ctx: RequestContext, operation: Operation, config_resource_type: int, name: str
) -> ErrorCode | None:
    """The authorization error for a config resource, or None when allowed (or of a
    type the handler refuses anyway)."""
    resource = _CONFIG_RESOURCES.get(config_resource_type)
    if resource is None:
        return None
    resource_type, refused = resource
    if resource_type == ResourceType.CLUSTER:
        name = CLUSTER_NAME
    return None if ctx.allowed(operation, resource_type, name) else refused
