"""Share sessions (KIP-932): what one share-group member fetches, remembered between
ShareFetch requests so later ones name only the partitions that change.

A session belongs to (group id, member id). The request's share session epoch says:

     0   open a session (one still open for the member is replaced; what the member
         holds stays its own until a final epoch, its connection closing, or the
         acquisition locks running out)
    -1   close the session once this request's acknowledgements are done
     n   the session's next epoch: the request adds its topics to the session and
         drops its forgotten ones; the epoch then moves on by one

A missing session answers SHARE_SESSION_NOT_FOUND, a wrong epoch
INVALID_SHARE_SESSION_EPOCH; neither changes the session. A session also ends when
the connection that opened it closes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1

SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
SHARE_SESSION_LIMIT_REACHED = 133

SessionKey = tuple[str, str]  # group id, member id
TopicPartition = tuple[uuid.UUID, int]


class ShareSessionError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # what the next request must carry
    connection_id: str = ""  # the connection that opened it
    partitions: dict[TopicPartition, None] = field(default_factory=dict)  # in order
    fetches: int = 0  # ShareFetch requests served (where the next one starts reading)

    def update(self, added: Iterable[TopicPartition], forgotten: Iterable[TopicPartition]) -> None:
        for tp in added:
            self.partitions.setdefault(tp, None)
        for tp in forgotten:
            self.partitions.pop(tp, None)


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[SessionKey, ShareSession] = {}

    def open(self, group_id: str, member_id: str, connection_id: str = "") -> ShareSession:
        """A new session for the member, in place of one it had (what the member holds
        is not touched: records are held by the member, not by its session)."""
        key = (group_id, member_id)
        self.sessions.pop(key, None)
        if len(self.sessions) >= self.max_sessions:
            raise ShareSessionError(
                SHARE_SESSION_LIMIT_REACHED, "The limit of share sessions has been reached."
            )
        session = self.sessions[key] = ShareSession(group_id, member_id, 1, connection_id)
        return session

    def check(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a request with `epoch` (not 0) continues or closes."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionError(
                SHARE_SESSION_NOT_FOUND, f"No share session for member {member_id}."
            )
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            raise ShareSessionError(
                INVALID_SHARE_SESSION_EPOCH,
                f"Share session epoch {epoch} is not the expected {session.epoch}.",
            )
        return session

    def advance(self, session: ShareSession) -> None:
        session.epoch = 1 if session.epoch == MAX_EPOCH else session.epoch + 1

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def close_connection(self, connection_id: str) -> list[ShareSession]:
        """End the sessions the connection opened; they are returned."""
        ended = [s for s in self.sessions.values() if s.connection_id == connection_id]
        for session in ended:
            del self.sessions[(session.group_id, session.member_id)]
        return ended
