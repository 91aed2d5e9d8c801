"""How the heartbeats of consumer, share and streams groups refuse a request: the error
they raise, and the messages Kafka words for an unknown member and a fenced epoch."""

from __future__ import annotations

from odradek.protocol.errors import ErrorCode


class HeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def fenced_message(kind: str, epoch: int, known: int) -> str:
    """FENCED_MEMBER_EPOCH's message, in Kafka's words (`kind`: consumer or share)."""
    relation = "greater" if epoch > known else "smaller"
    return (
        f"The {kind} group member has a {relation} member epoch ({epoch}) than the one "
        f"known by the group coordinator ({known}). The member must abandon all its "
        "partitions and rejoin."
    )
