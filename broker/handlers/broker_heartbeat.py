"""BrokerHeartbeat (63), v0-v1: served on the controller listener.

- Keeps the broker's session (`broker.session.timeout.ms`) and says where it is in the
  metadata log. Once it has replayed its own registration it is caught up, and a
  heartbeat that does not ask to stay fenced unfences it.
- `want_shut_down`: the broker is fenced at once, its partitions get new leaders,
  and the answer says it may shut down.
- `offline_log_dirs` (v1): the broker's failed log directories; its replicas there
  leave their ISRs and stop leading (coordinator/cluster/directories.py).
- BROKER_ID_NOT_REGISTERED and STALE_BROKER_EPOCH send the broker back to register.
"""

from __future__ import annotations

from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller

MIN_VERSION, MAX_VERSION = 0, 1
# the fields read are those of v0: typed as the newest


async def handle(ctx: RequestContext, request: BrokerHeartbeatRequest) -> Reply:
    details = {
        "node_id": request.broker_id,
        "broker_epoch": request.broker_epoch,
        "current_metadata_offset": request.current_metadata_offset,
        "want_fence": request.want_fence,
        "want_shutdown": request.want_shut_down,
        "offline_log_dirs": getattr(request, "offline_log_dirs", ()),
    }
    answer = await answered_by_controller(ctx, lambda shard: shard.broker_heartbeat(details))
    if answer["error_code"] == 0 and ctx.services.controller is not None:
        ctx.services.controller.observed(request.broker_id, request.current_metadata_offset)
    return {
        "throttle_time": 0,
        "error_code": answer["error_code"],
        "is_caught_up": answer.get("is_caught_up", False),
        "is_fenced": answer.get("is_fenced", True),
        "should_shut_down": answer.get("should_shutdown", False),
    }
