"""AlterClientQuotas (49), v0-v1.

- Each entry names an entity (user, client-id, ip; a null name is the type's
  default) and ops: set a key to a value, or remove it. Each entity is answered once,
  in the order first named, with Kafka's controller's checks and messages
  (INVALID_REQUEST): an empty entity, an unknown or empty-named type, ip with user or
  client-id, an ip that is neither an address nor a resolvable host, an unknown key
  for the entity (user / client-id: producer_byte_rate, consumer_byte_rate,
  request_percentage, controller_mutation_rate; ip: connection_creation_rate), a
  value not above 0, a fraction or too large a value for an integral key, a key or an
  entity named twice ("Ignoring duplicate entity"). Removing a key that is not set
  is no change and no error.
- Entities with an error are left as they were; the others change, durably, before
  the answer (settings/client_quotas.py). `validate_only` checks and changes nothing.
- Needs ALTER_CONFIGS on the cluster; otherwise every entity is
  CLUSTER_AUTHORIZATION_FAILED.
- In a cluster the broker asked passes the request on to the controller (the quotas
  live in the metadata log and every broker follows) and answers once its own view
  has the change.
- Enforcement: broker/dataplane/quotas.py.
"""

from __future__ import annotations

from typing import Any

import structlog
from kio.schema.alter_client_quotas.v0.request import (
    AlterClientQuotasRequest as AlterClientQuotasRequestV0,
)
from kio.schema.alter_client_quotas.v1.request import (
    AlterClientQuotasRequest as AlterClientQuotasRequestV1,
)

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.controller_documents import ControllerQuotas
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import CLUSTER_NAME, Operation, ResourceType
from odradek.broker.settings.client_quotas import (
    Alteration,
    ClientQuotaStore,
    Entity,
    entity_of,
    unresolvable_hosts,
)
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1

log = structlog.get_logger("broker")

AlterClientQuotasRequest = AlterClientQuotasRequestV0 | AlterClientQuotasRequestV1


def _entry(entity: Any, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"entity": entity, "error_code": code, "error_message": message}


def _named(entity: Entity) -> list[dict[str, Any]]:
    return [{"entity_type": kind, "entity_name": name} for kind, name in entity]


def _all_failed(request: AlterClientQuotasRequest, code: ErrorCode, message: str) -> Reply:
    """The same error for every entry, each as the request named it."""
    entries = [
        _entry(
            [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity],
            code,
            message,
        )
        for entry in request.entries
    ]
    return {"throttle_time": 0, "entries": entries}


async def handle(ctx: RequestContext, request: AlterClientQuotasRequest) -> Reply:
    on_controller = ctx.listener.controller and ctx.services.controller is not None
    if not on_controller and not ctx.allowed(
        Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        refused = ErrorCode.cluster_authorization_failed
        return _all_failed(request, refused, "Cluster authorization failed.")
    member = ctx.services.member
    if not on_controller and member is not None:
        try:
            return await through_controller(member, 49, ctx.version, request)
        except NodeUnreachable as exc:
            return _all_failed(request, ErrorCode.request_timed_out, str(exc))
    store: ClientQuotaStore | ControllerQuotas = ctx.services.client_quotas
    if on_controller and ctx.services.controller is not None:
        store = ctx.services.controller.quotas  # the cluster's, in the metadata log
    alterations: list[Alteration] = [
        (
            entity_of((e.entity_type, e.entity_name) for e in entry.entity),
            [(op.key, None if op.remove else float(op.value)) for op in entry.ops],
        )
        for entry in request.entries
    ]
    unresolvable = await unresolvable_hosts(alterations)
    try:
        outcome = await store.alter(alterations, request.validate_only, unresolvable)
    except OSError as exc:
        log.error("client quotas not saved", path=str(store.path), error=str(exc))
        failed = f"not saved: {exc.strerror}"
        return _all_failed(request, ErrorCode.unknown_server_error, failed)
    changed = [entity for entity, problem in outcome if problem is None]
    if changed and not request.validate_only:
        log.info("client quotas altered", entities=[dict(entity) for entity in changed])
    entries = [
        _entry(_named(entity), ErrorCode.none, None)
        if problem is None
        else _entry(_named(entity), problem[0], problem[1])
        for entity, problem in outcome
    ]
    return {"throttle_time": 0, "entries": entries}
