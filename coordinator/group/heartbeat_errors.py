"""How the heartbeats of consumer, share and streams groups refuse a request: the error
they raise, and the errors Kafka words the same way for every type (an unknown member,
a fenced epoch, a full group)."""

from __future__ import annotations

from odradek.protocol.errors import ErrorCode


class HeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def fenced(kind: str, epoch: int, known: int) -> HeartbeatError:
    """FENCED_MEMBER_EPOCH, in Kafka's words (`kind`: consumer, share or streams)."""
    relation = "greater" if epoch > known else "smaller"
    return HeartbeatError(
        ErrorCode.fenced_member_epoch,
        f"The {kind} group member has a {relation} member epoch ({epoch}) than the one "
        f"known by the group coordinator ({known}). The member must abandon all its "
        "partitions and rejoin.",
    )


def unknown_member(group_id: str, member_id: str) -> HeartbeatError:
    return HeartbeatError(
        ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group_id}."
    )


def not_of_kind(group_id: str, kind: str) -> str:
    """Kafka's words when a group of another type has the id."""
    return f"Group {group_id} is not a {kind} group."


def not_found(group_id: str) -> str:
    return f"Group {group_id} not found."
