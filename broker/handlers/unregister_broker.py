"""UnregisterBroker (64), v0: a broker is removed from the cluster (`kafka-cluster
unregister --id N`, Admin.unregisterBroker).

- On the controller listener: the broker is fenced (its partitions get other
  leaders, it leaves their ISRs) and its registration removed; BROKER_ID_NOT_REGISTERED
  for an id no broker holds. A broker that comes back registers anew.
- On a broker's listener (a broker of a cluster), the request goes on to the active
  controller, as Kafka's brokers pass it on. A node of its own does not serve it.
- With ACLs it needs ALTER on the cluster.
"""

from __future__ import annotations

from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest

from odradek.broker.cluster.admin import as_dict
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import acls_enabled, cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0
API_KEY = 64


def _answer(code: ErrorCode) -> Reply:
    return {"throttle_time": 0, "error_code": code, "error_message": None}


async def handle(ctx: RequestContext, request: UnregisterBrokerRequest) -> Reply:
    if acls_enabled(ctx) and not cluster_allowed(ctx, Operation.ALTER):
        return _answer(ErrorCode.cluster_authorization_failed)
    member = ctx.services.member
    if not ctx.listener.controller and member is not None:
        try:
            return as_dict(await member.ask_controller(API_KEY, ctx.version, as_dict(request)))
        except NodeUnreachable:
            return _answer(ErrorCode.request_timed_out)
    broker_id = int(request.broker_id)
    answer = await answered_by_controller(ctx, lambda shard: shard.unregister_broker(broker_id))
    return _answer(answer["error_code"])
