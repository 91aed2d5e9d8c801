"""Topic changes on a broker of a cluster: the broker checks the request as it would
alone, the controller decides (placement, replication factor, names taken meanwhile)
and writes the metadata log, and the broker answers once its own view has the change,
so a client's next request to it sees the topic as it answered."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.dataplane.topics import Topic, TopicError
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.member import ClusterMember
    from odradek.broker.cluster.node import Node

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, ALTER_CONFIGS = 19, 20, 37, 44
TOPIC_RESOURCE, SET, DELETE = 2, 0, 1
VIEW_WAIT_S = 30.0


def _member(broker: Node) -> ClusterMember:
    assert broker.member is not None
    return broker.member


async def _ask(broker: Node, api_key: int, version: int, request: dict[str, Any]) -> Any:
    try:
        return await _member(broker).ask_controller(api_key, version, request)
    except NodeUnreachable as exc:
        raise TopicError(ErrorCode.request_timed_out, f"controller unreachable: {exc}") from exc


def _raise_for(code: int, message: str | None) -> None:
    if code != ErrorCode.none:
        raise TopicError(code, message or ErrorCode(code).name)


def _assignments(replicas: Sequence[Sequence[int]], first: int = 0) -> list[dict[str, Any]]:
    return [
        {"partition_index": index, "broker_ids": list(nodes)}
        for index, nodes in enumerate(replicas, start=first)
    ]


async def create_topic(
    broker: Node,
    name: str,
    partitions: int,
    configs: Mapping[str, str],
    factor: int,
    assignments: Sequence[Sequence[int]] | None = None,
) -> Topic:
    if factor <= 0:
        factor = broker.config.default_replication_factor
    if assignments:  # the count and factor are the assignments' (-1 in the request)
        partitions, factor = -1, -1
    request = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": factor,
                "assignments": _assignments(assignments or []),
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
        "timeout": int(VIEW_WAIT_S * 1000),
        "validate_only": False,
    }
    answer = await _ask(broker, CREATE_TOPICS, 7, request)
    result = answer.topics[0]
    await _settled(broker, result)
    topic = broker.topics.get(name)
    if topic is None or topic.topic_id != result.topic_id:
        raise TopicError(ErrorCode.request_timed_out, "the new topic did not reach this broker")
    return topic


async def delete_topic(broker: Node, name: str) -> None:
    request = {
        "topics": [{"name": name, "topic_id": uuid.UUID(int=0)}],
        "timeout": int(VIEW_WAIT_S * 1000),
    }
    answer = await _ask(broker, DELETE_TOPICS, 6, request)
    await _settled(broker, answer.responses[0])


async def create_partitions(
    broker: Node, name: str, count: int, assignments: Sequence[Sequence[int]] | None = None
) -> None:
    placed = None if assignments is None else [{"broker_ids": list(a)} for a in assignments]
    request = {
        "topics": [{"name": name, "count": count, "assignments": placed}],
        "timeout": int(VIEW_WAIT_S * 1000),
        "validate_only": False,
    }
    answer = await _ask(broker, CREATE_PARTITIONS, 3, request)
    await _settled(broker, answer.results[0])


async def set_topic_configs(broker: Node, name: str, configs: dict[str, str]) -> None:
    """The change from the topic's configs as this broker sees them, as the controller
    applies it (IncrementalAlterConfigs): names set, names gone back to defaults."""
    topic = broker.topics.get(name)
    old = topic.configs if topic is not None else {}
    await set_configs(broker, TOPIC_RESOURCE, name, configs, old)


async def set_configs(
    broker: Node, resource_type: int, name: str, configs: dict[str, str], old: dict[str, str]
) -> None:
    """A resource's whole set of configs (a topic's, a group's, a client-metrics
    subscription's), through the controller: the names set, the others of `old` removed."""
    operations = [{"name": k, "config_operation": SET, "value": v} for k, v in configs.items()]
    operations += [
        {"name": k, "config_operation": DELETE, "value": None} for k in old if k not in configs
    ]
    request = {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configs": operations}
        ],
        "validate_only": False,
    }
    answer = await _ask(broker, ALTER_CONFIGS, 1, request)
    await _settled(broker, answer.responses[0])


async def _settled(broker: Node, result: Any) -> None:
    """The controller's answer for a topic; once it is a change, this broker's view
    (and so its local topics) has everything the controller wrote until then."""
    _raise_for(result.error_code, result.error_message)
    try:
        await _member(broker).settle()
    except NodeUnreachable as exc:
        raise TopicError(ErrorCode.request_timed_out, f"controller unreachable: {exc}") from exc


async def through_controller(
    member: ClusterMember, api_key: int, version: int, request: Any, principal: str | None = None
) -> Any:
    """A request the controller answers for the cluster (ACLs, SCRAM credentials,
    delegation tokens), passed on as the client sent it (its authorization checked
    here; `principal`: the one it is made for), answered once this broker's view has
    the change. Raises NodeUnreachable."""
    answer = await member.ask_controller(api_key, version, as_dict(request), principal)
    await member.settle()
    return as_dict(answer)


def as_dict(message: Any) -> Any:
    """A decoded message (named tuples all the way down) as the encoder takes it."""
    if hasattr(message, "_asdict"):
        return {name: as_dict(value) for name, value in message._asdict().items()}
    if isinstance(message, (list, tuple)):
        return [as_dict(item) for item in message]
    return message
