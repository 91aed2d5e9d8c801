"""ControllerRegistration (70), v0, on the controller listener: a controller registers
its incarnation and listeners with the quorum's leader, which keeps them in the
metadata (RegisterControllerRecord); UnregisterController removes one."""

from __future__ import annotations

from functools import partial

from kio.schema.controller_registration.v0.request import ControllerRegistrationRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.settings.listeners import protocol_named
from odradek.coordinator.cluster import controllers
from odradek.coordinator.cluster.records import ControllerValue, Endpoint
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: ControllerRegistrationRequest) -> Reply:
    if request.incarnation_id is None:
        return {"throttle_time": 0, "error_code": ErrorCode.invalid_request, "error_message": None}
    value = ControllerValue(
        request.incarnation_id,
        tuple(
            Endpoint(
                listener.name,
                listener.host,
                listener.port,
                protocol_named(listener.security_protocol),
            )
            for listener in request.listeners
        ),
    )
    answer = await answered_by_controller(
        ctx, partial(controllers.register, node_id=int(request.controller_id), value=value)
    )
    return {
        "throttle_time": 0,
        "error_code": answer["error_code"],
        "error_message": answer.get("error_message"),
    }
