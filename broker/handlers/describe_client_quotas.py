"""DescribeClientQuotas (48), v0-v1.

- A filter is a list of components, each an entity type (user, client-id, ip) with a
  match: an exact name (0), the type's default (1, a null name) or any name given
  (2). An entity matches when it has every component's type with a fitting name;
  with `strict` it must have no other type either. No components and not strict:
  every entity.
- A filter Kafka refuses is answered with its error for the whole request and no
  entries: an empty or repeated type, a name where the match takes none or none
  where it takes one, an unknown match type (INVALID_REQUEST), an unknown entity type
  (UNSUPPORTED_VERSION), ip together with user or client-id (INVALID_REQUEST).
- Values are the quota keys set on each entity (doubles).
- Needs DESCRIBE_CONFIGS on the cluster: CLUSTER_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from kio.schema.describe_client_quotas.v0.request import (
    DescribeClientQuotasRequest as DescribeClientQuotasRequestV0,
)
from kio.schema.describe_client_quotas.v1.request import (
    DescribeClientQuotasRequest as DescribeClientQuotasRequestV1,
)

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import CLUSTER_NAME, Operation, ResourceType
from odradek.broker.settings.client_quotas import QuotaRequestError, describe
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1

DescribeClientQuotasRequest = DescribeClientQuotasRequestV0 | DescribeClientQuotasRequestV1


def _failed(code: ErrorCode, message: str) -> Reply:
    return {"throttle_time": 0, "error_code": code, "error_message": message, "entries": None}


async def handle(ctx: RequestContext, request: DescribeClientQuotasRequest) -> Reply:
    if not ctx.allowed(Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return _failed(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    quotas = ctx.services.client_quotas.quotas()
    try:
        found = describe(quotas, request.components, request.strict)
    except QuotaRequestError as exc:
        return _failed(exc.code, str(exc))
    entries = [
        {
            "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
            "values": [{"key": key, "value": value} for key, value in quotas[entity].items()],
        }
        for entity in found
    ]
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": "",  # as Kafka: empty, not null
        "entries": entries,
    }
