"""Fetch sessions (KIP-227): the broker remembers what a consumer fetches, so
incremental requests name only the partitions that changed, and incremental
responses carry only partitions with news (records, a moved high watermark,
last stable offset or log start offset, or an error).

Request (session_id, epoch) meanings:
    (0, -1)   no session: full request, full response
    (0, 0)    open a new session from this full request
    (id, 0)   close `id` and open a new one
    (id, -1)  close `id`, answer as without a session
    (id, n>0) incremental request on `id`; n must be the expected epoch
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_SESSIONS = 1000

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71

# A partition is named by (topic name, topic id, partition index). Clients on
# v13+ name topics by id only; older ones by name only.
PartitionKey = tuple[str | None, uuid.UUID | None, int]


@dataclass(slots=True)
class CachedPartition:
    fetch_offset: int
    max_bytes: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1

    def changed(self, high_watermark: int, last_stable: int, log_start: int) -> bool:
        """Record what the client will have been told; say whether it is news."""
        news = (
            high_watermark != self.high_watermark
            or last_stable != self.last_stable_offset
            or log_start != self.log_start_offset
        )
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable
        self.log_start_offset = log_start
        return news


@dataclass
class FetchSession:
    session_id: int
    epoch: int = 1  # the epoch the next incremental request must carry
    partitions: OrderedDict[PartitionKey, CachedPartition] = field(default_factory=OrderedDict)


class SessionError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """What to read for one request, and how to shape the answer."""

    session: FetchSession | None
    incremental: bool
    partitions: list[tuple[PartitionKey, CachedPartition]]

    @property
    def response_session_id(self) -> int:
        return self.session.session_id if self.session is not None else 0


class FetchSessionCache:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._max = max_sessions
        self._ids = itertools.count(random.randint(1, 1 << 20))

    def __len__(self) -> int:
        return len(self._sessions)

    def plan(
        self,
        session_id: int,
        epoch: int,
        requested: list[tuple[PartitionKey, int, int]],
        forgotten: list[PartitionKey],
    ) -> FetchPlan:
        """Apply the request to the cache; `requested` holds (key, fetch offset, max bytes)."""
        fresh = [(key, CachedPartition(offset, max_bytes)) for key, offset, max_bytes in requested]
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id:
                self._sessions.pop(session_id, None)
            if epoch == FINAL_EPOCH:
                return FetchPlan(None, False, fresh)
            session = self._open(fresh)
            return FetchPlan(session, False, fresh)
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionError(FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            raise SessionError(INVALID_FETCH_SESSION_EPOCH)
        session.epoch = epoch + 1 if epoch < (1 << 31) - 1 else 1
        self._sessions.move_to_end(session_id)
        for key in forgotten:
            session.partitions.pop(key, None)
        for key, cached in fresh:
            existing = session.partitions.get(key)
            if existing is None:
                session.partitions[key] = cached
            else:
                existing.fetch_offset = cached.fetch_offset
                existing.max_bytes = cached.max_bytes
        return FetchPlan(session, True, list(session.partitions.items()))

    def _open(self, partitions: list[tuple[PartitionKey, CachedPartition]]) -> FetchSession | None:
        if not partitions:
            return None
        while len(self._sessions) >= self._max:
            self._sessions.popitem(last=False)
        session_id = next(self._ids) & 0x7FFFFFFF or next(self._ids)
        session = FetchSession(session_id, partitions=OrderedDict(partitions))
        self._sessions[session_id] = session
        return session
