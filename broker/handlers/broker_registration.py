"""BrokerRegistration (62), v0-v3: served on the controller listener.

- A broker registers with its node id, cluster id, incarnation id (new at every
  start) and advertised listeners, and gets its broker epoch. It starts fenced.
- INCONSISTENT_CLUSTER_ID when its cluster.id is not the controller's;
  DUPLICATE_BROKER_REGISTRATION when another live node holds the id: a node that
  restarts after a crash takes its id back once the old session has ended (at once
  after a clean stop, and at once for the broker in the controller's own process).
- v2+ carries the ids of its log directories: a broker with one gets it assigned to
  each new replica of its own, as on Kafka (the others report where theirs lie).
"""

from __future__ import annotations

from kio.schema.broker_registration.v3.request import BrokerRegistrationRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.settings.listeners import protocol_named
from odradek.coordinator.cluster.records import Endpoint

MIN_VERSION, MAX_VERSION = 0, 3
# the fields read are those of v0: typed as the newest


async def handle(ctx: RequestContext, request: BrokerRegistrationRequest) -> Reply:
    member = ctx.services.member
    details = {
        "local": member is not None and request.incarnation_id == member.incarnation_id,
        "node_id": request.broker_id,
        "cluster_id": request.cluster_id,
        "incarnation_id": request.incarnation_id,
        "rack": request.rack,
        "endpoints": tuple(
            Endpoint(
                listener.name,
                listener.host,
                listener.port,
                protocol_named(listener.security_protocol),
            )
            for listener in request.listeners
        ),
        "log_dirs": tuple(getattr(request, "log_dirs", ())),  # v2+
    }
    answer = await answered_by_controller(ctx, lambda shard: shard.register_broker(details))
    return {
        "throttle_time": 0,
        "error_code": answer["error_code"],
        "broker_epoch": answer.get("broker_epoch", -1),
    }
