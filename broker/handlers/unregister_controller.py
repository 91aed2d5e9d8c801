"""UnregisterController (94), v0: a controller's registration removed from the
cluster's metadata (`kafka-cluster unregister-controller --id N`,
Admin.unregisterController, `kafka-metadata-quorum remove-controller --unregister`).

- Each controller registers its incarnation and listeners with the active controller
  (ControllerRegistration, RegisterControllerRecord) on every new leader epoch. The
  active controller removes the registration (UnregisterControllerRecord); an id not
  registered is CONTROLLER_ID_NOT_REGISTERED, "Controller ID N is not currently
  registered.", as on Kafka.
- Kafka also refuses it (UNSUPPORTED_VERSION) below metadata.version 4.4-IV2 (33);
  here the level is always 33 (it cannot go down), so that never applies.
- A controller not leading the quorum answers NOT_CONTROLLER.
- On a broker's listener (a broker of a cluster), the request goes on to the active
  controller, as Kafka's brokers pass it on. A node of its own does not serve it.
- With ACLs it needs ALTER on the cluster.
"""

from __future__ import annotations

from functools import partial

from odradek.broker.cluster.admin import as_dict
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import acls_enabled, cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.security.resources import Operation
from odradek.coordinator.cluster import controllers
from odradek.protocol.errors import ErrorCode
from odradek.protocol.schemas.unregister_controller.v0.request import (
    UnregisterControllerRequest,
)

MIN_VERSION, MAX_VERSION = 0, 0
API_KEY = 94


def _answer(code: int, message: str | None = None) -> Reply:
    return {"throttle_time": 0, "error_code": code, "error_message": message}


async def handle(ctx: RequestContext, request: UnregisterControllerRequest) -> Reply:
    if acls_enabled(ctx) and not cluster_allowed(ctx, Operation.ALTER):
        return _answer(ErrorCode.cluster_authorization_failed)
    member = ctx.services.member
    if not ctx.listener.controller and member is not None:
        try:
            return as_dict(await member.ask_controller(API_KEY, ctx.version, as_dict(request)))
        except NodeUnreachable:
            return _answer(ErrorCode.request_timed_out)
    controller = ctx.services.controller
    if controller is None or not controller.is_active:
        return _answer(ErrorCode.not_controller)
    unregister = partial(controllers.unregister, node_id=int(request.controller_id))
    answer = await answered_by_controller(ctx, unregister)
    return _answer(answer["error_code"], answer.get("error_message"))
