"""What a ConsumerGroupHeartbeat (KIP-848) is checked against before it looks at its
group, in Kafka's words, and the steps of it that are plain functions of a member and
its group."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from odradek.coordinator.group.assignors import ASSIGNORS, DEFAULT_ASSIGNOR
from odradek.coordinator.group.consumer import ConsumerGroup, ConsumerMember
from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.coordinator.group.record_codecs import TopicPartitions
from odradek.coordinator.group.regex import invalid_regex_message
from odradek.protocol.errors import ErrorCode

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.invalid_request, message)


def validate(request: dict[str, Any]) -> None:
    if not request["group_id"]:
        raise _invalid("GroupId can't be empty.")
    if request.get("instance_id") == "":
        raise _invalid("InstanceId can't be empty.")
    if request.get("rack_id") == "":
        raise _invalid("RackId can't be empty.")
    epoch = request["member_epoch"]
    if epoch > 0 or epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        if not request["member_id"]:
            raise _invalid("MemberId can't be empty.")
        if epoch == STATIC_LEAVE_EPOCH and request.get("instance_id") is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch == 0:
        if request.get("rebalance_timeout_ms", -1) == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.get("owned") is None or request["owned"]:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if not request.get("subscribed_topic_names") and not request.get("subscribed_topic_regex"):
            raise _invalid("SubscribedTopicNames must be set in first request.")
    else:
        raise _invalid("MemberEpoch is invalid.")
    assignor = request.get("server_assignor")
    if assignor is not None and assignor not in ASSIGNORS:
        raise HeartbeatError(
            ErrorCode.unsupported_assignor,
            f"ServerAssignor {assignor} is not supported. Supported assignors: "
            f"{', '.join(ASSIGNORS)}.",
        )
    if bad_regex := invalid_regex_message(request.get("subscribed_topic_regex") or ""):
        raise HeartbeatError(ErrorCode.invalid_regular_expression, bad_regex)


def with_request(member: ConsumerMember, request: dict[str, Any]) -> ConsumerMember:
    """The member with what the request changes (null fields change nothing)."""
    changes: dict[str, Any] = {
        "classic": None,  # it speaks the consumer protocol now
        "client_id": request.get("client_id", member.client_id),
        "client_host": request.get("client_host", member.client_host),
    }
    for field_name, request_name in (
        ("instance_id", "instance_id"),
        ("rack_id", "rack_id"),
        ("server_assignor", "server_assignor"),
        ("subscribed_topic_regex", "subscribed_topic_regex"),
    ):
        if request.get(request_name) is not None:
            changes[field_name] = request[request_name]
    if request.get("subscribed_topic_names") is not None:
        changes["subscribed_topic_names"] = tuple(request["subscribed_topic_names"])
    if request.get("rebalance_timeout_ms", -1) != -1:
        changes["rebalance_timeout_ms"] = request["rebalance_timeout_ms"]
    return ConsumerMember(**{**vars(member), **changes})


def progress(member: ConsumerMember) -> tuple[Any, ...]:
    return (
        member.member_epoch,
        member.previous_member_epoch,
        member.state,
        member.assigned,
        member.pending_revocation,
    )


def subscription_changed(before: ConsumerMember, after: ConsumerMember) -> bool:
    return (
        before.subscribed_topic_names != after.subscribed_topic_names
        or before.subscribed_topic_regex != after.subscribed_topic_regex
        or before.server_assignor != after.server_assignor
    )


def subset(owned: Mapping[uuid.UUID, frozenset[int]] | None, assigned: TopicPartitions) -> bool:
    if owned is None:
        return False
    return all(parts <= assigned.get(topic, frozenset()) for topic, parts in owned.items())


def held_by_another(group: ConsumerGroup, member_id: str) -> Callable[[uuid.UUID, int], bool]:
    """Whether another member owns (or still has to revoke) a partition. The set is made
    on the first question: most heartbeats of a settled group ask none."""
    held: dict[uuid.UUID, set[int]] | None = None

    def is_held(topic: uuid.UUID, partition: int) -> bool:
        nonlocal held
        if held is None:
            held = {}
            for other in group.members.values():
                if other.member_id == member_id:
                    continue
                for owned in (other.assigned, other.pending_revocation):
                    for t, parts in owned.items():
                        held.setdefault(t, set()).update(parts)
        return partition in held.get(topic, ())

    return is_held


def preferred_assignor(group: ConsumerGroup) -> str:
    asked = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    return asked.most_common(1)[0][0] if asked else DEFAULT_ASSIGNOR
