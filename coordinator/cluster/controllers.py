"""The controllers' own registrations (ControllerRegistration, UnregisterController), as
Kafka's controller keeps them in the metadata: each controller registers its
incarnation and listeners with the leader; a registration the same as the one held
writes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from odradek.coordinator.cluster import records as rec
from odradek.coordinator.runtime import Result
from odradek.protocol.errors import CONTROLLER_ID_NOT_REGISTERED, ErrorCode

if TYPE_CHECKING:
    from odradek.coordinator.cluster.shard import ClusterShard


def register(shard: ClusterShard, node_id: int, value: rec.ControllerValue) -> Result[Any]:
    answer = {"error_code": ErrorCode.none, "error_message": None}
    if shard.controllers.get(node_id) == value:
        return Result([], answer)
    return Result([rec.register_controller(node_id, value)], answer)


def unregister(shard: ClusterShard, node_id: int) -> Result[Any]:
    if node_id not in shard.controllers:
        message = f"Controller ID {node_id} is not currently registered."
        return Result([], {"error_code": CONTROLLER_ID_NOT_REGISTERED, "error_message": message})
    return Result([rec.unregister_controller(node_id)], {"error_code": 0, "error_message": None})
