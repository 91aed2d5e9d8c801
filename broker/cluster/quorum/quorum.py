"""One controller's part in the quorum that keeps `__cluster_metadata`, as KRaft does.

A voter is, at any time, one of:
- unattached: it knows no leader of its epoch (it may have voted); after a random
  `controller.quorum.election.timeout.ms` to twice that it becomes a candidate;
- candidate: it moved to the next epoch, voted for itself and asks the others (Vote);
  with a majority it leads, else after the election timeout and a random backoff
  (`controller.quorum.election.backoff.max.ms`) it tries again in a newer epoch;
- follower: it fetches the log from the leader (Fetch, with the epoch of its last
  record, so that the leader can tell it where their logs part); after
  `controller.quorum.fetch.timeout.ms` without an answer it becomes a candidate;
- leader: it writes a LeaderChange record as it takes office, tells the others
  (BeginQuorumEpoch), runs the cluster metadata shard and counts a record as written
  once a majority of the voters hold it (the high watermark). A leader that has not
  heard from a majority for one and a half fetch timeouts resigns.
A controller that is not a voter (voters.py) follows as an observer, reading up to the
high watermark as brokers do, and never stands for election.

Every change of epoch, leader or vote is written to `quorum-state` before it is acted
on. This is also the metadata partition's `replication` (broker/dataplane/topics.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog

from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.cluster.quorum import follower_log, requests, snapshots, state_file
from odradek.broker.cluster.quorum.peers import Peers
from odradek.broker.cluster.quorum.records import leader_change_batch
from odradek.broker.cluster.quorum.rules import (
    NONE,
    Election,
    LogEnd,
    committed_end,
    decide_vote,
    divergence,
    majority,
)
from odradek.broker.cluster.quorum.snapshots import SnapshotId
from odradek.broker.cluster.quorum.voters import VoterSet, voters_batch
from odradek.broker.cluster.waiters import HighWatermarkWaiters
from odradek.protocol.batch import iter_batches
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.quorum.voters import VoterHistory
    from odradek.broker.dataplane.topics import Partition
    from odradek.broker.settings.config import BrokerConfig

log = structlog.get_logger("controller")

UNATTACHED, PROSPECTIVE, CANDIDATE = "unattached", "prospective", "candidate"
FOLLOWER, LEADER = "follower", "leader"
FETCH = 1
RETRY_S = 0.05


class Deposed(Exception):
    """This controller stopped leading before the records waited for were committed."""


class FetchCheck(NamedTuple):
    """What the leader makes of a fetch before reading: an error, where the fetcher's
    log parts from its own, or how far it may read (None: to the log end)."""

    error: ErrorCode = ErrorCode.none
    diverging: LogEnd | None = None
    read_to: int | None = None
    snapshot: SnapshotId | None = None  # below the log's start: fetch this first


class Quorum:
    def __init__(
        self,
        node_id: int,
        history: VoterHistory,
        partition: Partition,
        config: BrokerConfig,
        on_lead: Callable[[], None],
        on_resign: Callable[[], None],
        listener: str = "CONTROLLER",
        bootstrap_servers: Sequence[tuple[str, int]] = (),
    ) -> None:
        self.node_id = node_id
        self.history = history
        self.partition = partition
        self.cluster_id = config.cluster_id
        self._fetch_timeout_s = config.controller_quorum_fetch_timeout_ms / 1000
        self._election_timeout_s = config.controller_quorum_election_timeout_ms / 1000
        self._backoff_max_s = config.controller_quorum_election_backoff_max_ms / 1000
        self._request_timeout_s = config.controller_quorum_request_timeout_ms / 1000
        self.peers = Peers(node_id, history, listener, bootstrap_servers, self._request_timeout_s)
        self._on_lead = on_lead
        self._on_resign = on_resign
        self.election = state_file.read(partition.log.directory)
        self.role = UNATTACHED
        self.high_watermark = 0
        self.epoch_start = 0  # where the leader's LeaderChange record is
        self.voter_ends: dict[int, int] = {}  # the leader's: each voter's log end
        self.voter_seen: dict[int, float] = {}  # ...and when it last fetched (monotonic)
        self.voter_seen_ms: dict[int, int] = {}  # ...as a wall clock, for DescribeQuorum
        self._waiters = HighWatermarkWaiters()
        self._changed = asyncio.Event()
        self._leader_heard = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._telling: set[int] = set()  # voters a BeginQuorumEpoch is on its way to
        self._stopping = False

    # -- the voters ------------------------------------------------------------------

    @property
    def voters(self) -> dict[int, tuple[str, int]]:
        """The voters in force (the latest set appended) and where to reach them."""
        return self.peers.voters()

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.history.voters

    @property
    def kraft_version(self) -> int:
        return self.history.kraft_version

    # -- the Replication protocol (the metadata partition's) --------------------------

    @property
    def leader_epoch(self) -> int:
        return self.election.epoch

    @property
    def leader_id(self) -> int:
        return self.election.leader_id

    @property
    def replicas(self) -> tuple[int, ...]:
        return tuple(sorted(self.voters))

    @property
    def isr(self) -> tuple[int, ...]:
        return self.replicas

    @property
    def is_leader(self) -> bool:
        return self.role == LEADER

    def update_high_watermark(self, log_end_offset: int) -> bool:
        if self.role != LEADER:
            return False
        self.voter_ends[self.node_id] = log_end_offset
        return self._commit()

    def wait_for(self, offset: int) -> asyncio.Future[None]:
        return self._waiters.wait_for(offset, self.high_watermark)

    # -- running ---------------------------------------------------------------------

    def start(self) -> None:
        log_epoch = self.partition.log.latest_epoch
        if log_epoch > self.election.epoch:  # a log written before the quorum-state
            self._persist(Election(log_epoch))
        leader = self.election.leader_id
        if leader not in (NONE, self.node_id) and leader in self.voters:
            self.role = FOLLOWER  # as it was before the restart, until the leader is gone
        self._task = asyncio.get_running_loop().create_task(self._run(), name="quorum")

    async def stop(self) -> None:
        """Stop; a leader first tells the others (EndQuorumEpoch), so that they elect a
        new one at once rather than after a fetch timeout."""
        self._stopping = True
        if self.role == LEADER and len(self.voters) > 1:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._end_epoch(), self._request_timeout_s)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self.peers.close()
        self._waiters.fail(Deposed())

    async def _run(self) -> None:
        while not self._stopping:
            try:
                if self.role == LEADER:
                    await self._lead()
                elif self.role == FOLLOWER:
                    await self._follow()
                elif self.role == CANDIDATE:
                    await self._campaign()
                elif self.role == PROSPECTIVE:
                    await self._canvass()
                else:
                    await self._wait_for_a_leader()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("quorum step failed", role=self.role, epoch=self.election.epoch)
                await asyncio.sleep(RETRY_S)

    async def _wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if something changed this voter's state."""
        self._changed.clear()
        try:
            await asyncio.wait_for(self._changed.wait(), max(seconds, 0))
        except TimeoutError:
            return False
        return True

    # -- the roles -------------------------------------------------------------------

    async def _wait_for_a_leader(self) -> None:
        if not self.is_voter:  # an observer: it asks around for the leader
            if not await self._find_leader():
                await self._wait(self._election_timeout_s / 4)
            return
        if len(self.voters) == 1:
            self._become_candidate()
            return
        timeout = self._election_timeout_s * (1 + random.random())
        if not await self._wait(timeout) and self.role == UNATTACHED:
            self._become_prospective()

    async def _canvass(self) -> None:
        """A pre-vote (KIP-996): only if a majority would vote for this voter does it
        move to a new epoch, so that a voter cut off from the others (which hear from
        their leader) does not depose it when it comes back."""
        epoch = self.election.epoch
        granted = await self._gather_votes(PROSPECTIVE, epoch + 1, pre_vote=True)
        if granted is not None:
            self._become_candidate()
        elif await self._back_off(PROSPECTIVE, epoch):
            leader = self.election.leader_id
            if leader not in (NONE, self.node_id):  # the others still hear it: try again
                self._become_follower(epoch, leader, heard=False)

    async def _campaign(self) -> None:
        epoch = self.election.epoch
        granted = await self._gather_votes(CANDIDATE, epoch, pre_vote=False)
        if granted is not None:
            self._become_leader(granted)
        elif await self._back_off(CANDIDATE, epoch):
            self._become_candidate()

    def _still(self, role: str, epoch: int) -> bool:
        return self.role == role and self.election.epoch == epoch

    async def _gather_votes(self, role: str, epoch: int, pre_vote: bool) -> set[int] | None:
        """Ask every other voter; the voters for (this one included) once they are a
        majority, None if they are not within the election timeout or this voter's
        state moved on meanwhile."""
        current = self.election.epoch
        granted = {self.node_id}
        if len(granted) >= majority(len(self.voters)):
            return granted
        mine = self._log_end()
        asks = [
            asyncio.ensure_future(self._ask_vote(voter, epoch, mine, pre_vote))
            for voter in self.voters
            if voter != self.node_id
        ]
        try:
            for done in asyncio.as_completed(asks, timeout=self._election_timeout_s):
                with contextlib.suppress(NodeUnreachable):
                    voter, vote = await done
                    if not self._still(role, current):
                        return None  # a newer epoch or a leader came meanwhile
                    if vote:
                        granted.add(voter)
                    if len(granted) >= majority(len(self.voters)):
                        return granted
        except TimeoutError:
            pass
        finally:
            for ask in asks:
                ask.cancel()
        return None

    async def _back_off(self, role: str, epoch: int) -> bool:
        """After a lost or split election: the rest of the election timeout, then a
        random backoff. True if this voter is still where it was, to try again."""
        await self._wait(self._election_timeout_s / 2)
        if self._still(role, epoch):
            await self._wait(random.random() * self._backoff_max_s)
        return self._still(role, epoch)

    async def _ask_vote(
        self, voter: int, epoch: int, mine: LogEnd, pre_vote: bool
    ) -> tuple[int, bool]:
        result = await self.peers.ask_vote(self.cluster_id, voter, epoch, mine, pre_vote)
        if result is None:
            return voter, False
        self.observe(result.leader_epoch, result.leader_id)
        return voter, bool(result.vote_granted) and result.error_code == ErrorCode.none

    async def _follow(self) -> None:
        leader = self.election.leader_id
        epoch = self.election.epoch
        try:
            answer = await self._fetch_from(leader)
        except NodeUnreachable:
            answer = None
        if self.role != FOLLOWER or self.election.epoch != epoch:
            return
        if answer is not None and answer.snapshot_id.end_offset >= 0:
            await self._catch_up_from_snapshot(leader, answer.snapshot_id)
            self._leader_heard = time.monotonic()
            return
        if answer is not None and self._take(answer):
            self._leader_heard = time.monotonic()
            return
        if time.monotonic() - self._leader_heard > self._fetch_timeout_s:
            if not self.is_voter:  # an observer looks for the leader again
                self._step_down(replace(self.election, leader_id=NONE))
                return
            log.warning("leader unreachable: asking for an election", leader=leader, epoch=epoch)
            self._become_prospective()
        else:
            await self._wait(RETRY_S * 4)

    async def _catch_up_from_snapshot(self, leader: int, wanted: Any) -> None:
        """What this follower needs was let go of by the leader's log: take its
        snapshot, and let the log start where the snapshot ends."""
        snapshot = SnapshotId(wanted.end_offset, wanted.epoch)
        try:
            data = await snapshots.fetch(
                self.peers.client(leader), self.cluster_id, self.node_id, snapshot
            )
        except (NodeUnreachable, snapshots.SnapshotUnavailable) as exc:
            log.warning("metadata snapshot not fetched", error=str(exc))
            await self._wait(RETRY_S * 4)
            return
        follower_log.start_after(self.partition.log, self.history, snapshot, data)
        self.high_watermark = snapshot.end_offset

    async def _find_leader(self) -> bool:
        """An observer asks around which controller leads, and follows it."""
        found = await self.peers.find_leader()
        if found is None or self.role != UNATTACHED or found[1] < self.election.epoch:
            return False
        self._become_follower(found[1], found[0])
        return True

    async def _lead(self) -> None:
        epoch = self.election.epoch
        now = time.monotonic()
        silent = [v for v in self.voters if v != self.node_id and v not in self.voter_ends]
        for voter in silent:  # a voter that has not fetched in this epoch yet is told
            if voter not in self._telling:
                self._telling.add(voter)
                asyncio.ensure_future(self._begin_epoch(voter, epoch))
        heard = sum(
            1
            for voter in self.voters
            if voter == self.node_id
            or now - self.voter_seen.get(voter, -1e9) <= 1.5 * self._fetch_timeout_s
        )
        if heard < majority(len(self.voters)):
            log.warning("lost the majority of the quorum: resigning", epoch=epoch)
            self._step_down(replace(self.election, leader_id=NONE))
            return
        await self._wait(min(self._fetch_timeout_s / 4, 0.5))

    # -- transitions -----------------------------------------------------------------

    def _persist(self, election: Election) -> None:
        if election != self.election:
            state_file.write(self.partition.log.directory, election)
            self.election = election

    def _become_prospective(self) -> None:
        self._step_down(self.election, PROSPECTIVE)

    def _become_candidate(self) -> None:
        self._step_down(Election(self.election.epoch + 1, NONE, self.node_id), CANDIDATE)
        log.info("candidate", node_id=self.node_id, epoch=self.election.epoch)

    def _become_leader(self, granted: set[int]) -> None:
        self._persist(replace(self.election, leader_id=self.node_id))
        self.role = LEADER
        plog = self.partition.log
        self.epoch_start = plog.log_end_offset
        batch = leader_change_batch(
            self.node_id, sorted(self.voters), sorted(granted), int(time.time() * 1000)
        )
        self._append_control(batch)
        if self.kraft_version >= 1 and self.history.voters_offset < 0:
            # the first leader copies the bootstrap snapshot's voters into the log
            self.append_voters(self.history.voters, level=self.kraft_version)
        now = time.monotonic()
        self.voter_ends = {}
        self.voter_seen = {voter: now for voter in self.voters}
        self.voter_seen_ms = {}
        log.info("leading the quorum", node_id=self.node_id, epoch=self.election.epoch)
        self._on_lead()
        self.partition.appended()
        self._changed.set()

    def _append_control(self, batch: bytes) -> int:
        """Append a control batch as leader; the offset of its first record."""
        data = bytearray(batch)
        appended = self.partition.log.append(
            data,
            list(iter_batches(data)),
            leader_epoch=self.election.epoch,
            now_ms=int(time.time() * 1000),
        )
        if self.history.take(data):
            self.peers.voters_changed()
        return appended.first_offset

    def append_voters(self, new: VoterSet, level: int | None = None) -> int:
        """As leader: `new` is the voter set from now on (committed once its offset is
        below the high watermark), after a kraft.version record of `level` if given.
        The offset it takes effect at."""
        batch = voters_batch(level, new, int(time.time() * 1000))
        offset = self._append_control(batch) + (0 if level is None else 1)
        now = time.monotonic()
        self.voter_seen.update({n: now for n in new.nodes if n not in self.voter_seen})
        self.partition.appended()
        return offset

    def _become_follower(self, epoch: int, leader: int, heard: bool = True) -> None:
        """Follow `leader`; `heard`: this voter just heard from it (else the fetch
        timeout still runs from the last time it did)."""
        voted = self.election.voted_id if epoch == self.election.epoch else NONE
        self._step_down(Election(epoch, leader, voted), FOLLOWER)
        if heard:
            self._leader_heard = time.monotonic()
        log.info("following", node_id=self.node_id, leader=leader, epoch=epoch)

    def _step_down(self, election: Election, role: str = UNATTACHED) -> None:
        was_leader = self.role == LEADER
        self._persist(election)
        self.role = role
        if was_leader:
            self._waiters.fail(Deposed())
            self._on_resign()
            self.partition.data_arrived()  # parked fetches answer NOT_LEADER_OR_FOLLOWER
        self._changed.set()

    def observe(self, epoch: int, leader: int) -> None:
        """Another node's request or answer names `epoch` and its `leader` (NONE if it
        knows none): a newer epoch is followed, an older one ignored."""
        if epoch > self.election.epoch:
            if leader not in (NONE, self.node_id):
                self._become_follower(epoch, leader)
            else:
                self._step_down(Election(epoch))
        elif (
            epoch == self.election.epoch
            and leader not in (NONE, self.node_id, self.election.leader_id)
            and self.role != FOLLOWER
        ):
            # news of this epoch's leader (one it knew already and lost touch with, as
            # a pre-vote's answers name it, is no news)
            self._become_follower(epoch, leader)

    # -- requests from the other controllers (the handlers call these) --------------

    def vote(self, candidate: int, epoch: int, last: LogEnd) -> bool:
        # with dynamic voters, a candidate this voter does not know of yet may be one
        # (its set may be newer): the log's recency decides, as in KRaft
        if candidate not in self.voters and self.kraft_version == 0:
            return False
        if epoch > self.election.epoch and self.role != UNATTACHED:
            self._step_down(Election(epoch))
        granted, election = decide_vote(self.election, candidate, epoch, last, self._log_end())
        self._persist(election)
        if granted:
            self._changed.set()  # a vote given restarts the wait before an election
            log.info("voted", node_id=self.node_id, candidate=candidate, epoch=epoch)
        return granted

    def would_vote(self, candidate: int, epoch: int, last: LogEnd) -> bool:
        """A pre-vote: whether `vote` would grant it, refused while this voter hears
        from a leader; nothing changes."""
        if (candidate not in self.voters and self.kraft_version == 0) or self.role == LEADER:
            return False
        if self.role == FOLLOWER and time.monotonic() - self._leader_heard < self._fetch_timeout_s:
            return False
        granted, _ = decide_vote(self.election, candidate, epoch, last, self._log_end())
        return granted

    def begin_epoch(self, leader: int, epoch: int) -> ErrorCode:
        if epoch < self.election.epoch:
            return ErrorCode.fenced_leader_epoch
        if leader != self.node_id and not (self.role == FOLLOWER and self.leader_id == leader):
            self._become_follower(epoch, leader)
        return ErrorCode.none

    def end_epoch(self, leader: int, epoch: int, successors: list[int]) -> ErrorCode:
        if epoch < self.election.epoch:
            return ErrorCode.fenced_leader_epoch
        if epoch == self.election.epoch and self.leader_id == leader and leader != self.node_id:
            self._step_down(replace(self.election, leader_id=NONE))
            if successors[:1] == [self.node_id]:
                self._become_candidate()
        return ErrorCode.none

    def check_fetch(
        self, replica_id: int, leader_epoch: int, fetch_offset: int, last_fetched_epoch: int
    ) -> FetchCheck:
        if self.role != LEADER:
            return FetchCheck(ErrorCode.not_leader_or_follower)
        if leader_epoch >= 0 and leader_epoch < self.election.epoch:
            return FetchCheck(ErrorCode.fenced_leader_epoch)
        if leader_epoch > self.election.epoch:
            return FetchCheck(ErrorCode.unknown_leader_epoch)
        plog = self.partition.log
        if fetch_offset < plog.log_start_offset:
            return FetchCheck(snapshot=snapshots.latest(Path(plog.directory)))
        parted = divergence(
            fetch_offset, last_fetched_epoch, plog.end_offset_for_epoch(last_fetched_epoch)
        )
        if parted is not None:
            return FetchCheck(diverging=parted)
        if replica_id not in self.voters:
            return FetchCheck(read_to=self.high_watermark)
        self.voter_ends[replica_id] = fetch_offset
        self.voter_seen[replica_id] = time.monotonic()
        self.voter_seen_ms[replica_id] = int(time.time() * 1000)
        if self._commit():
            self.partition.high_watermark_moved()
        return FetchCheck()

    # -- replication -----------------------------------------------------------------

    def _commit(self) -> bool:
        voters = self.history.voters
        ends = [end for node_id, end in self.voter_ends.items() if node_id in voters]
        end = committed_end(ends, len(voters), self.epoch_start)
        if end is None or end <= self.high_watermark:
            return False
        self.high_watermark = end
        self._waiters.reached(end)
        if not self.is_voter and end > self.history.voters_offset:
            # this leader's own removal is committed: it leads no more (KIP-853)
            log.info("removed from the voters: resigning", node_id=self.node_id)
            asyncio.get_running_loop().call_soon(self._resign)
        return True

    def _resign(self) -> None:  # and tell the voters, so that they elect one at once
        if self.role == LEADER:
            asyncio.ensure_future(self._end_epoch())
            self._step_down(replace(self.election, leader_id=NONE))

    def _log_end(self) -> LogEnd:
        return follower_log.log_end(self.partition.log)

    async def _fetch_from(self, leader: int) -> Any:
        request = requests.fetch(
            self.cluster_id, self.node_id, self.election.epoch, self._log_end()
        )
        answer = await self.peers.client(leader).call(FETCH, 12, request)
        return answer.responses[0].partitions[0]

    def _take(self, answer: Any) -> bool:
        """Apply the leader's fetch answer; False if it did not serve it."""
        current = answer.current_leader
        if current is not None and current.leader_epoch >= 0:
            self.observe(current.leader_epoch, current.leader_id)
            if self.role != FOLLOWER:
                return False
        if answer.error_code != ErrorCode.none:
            return False
        plog = self.partition.log
        diverging = answer.diverging_epoch
        if diverging is not None and diverging.end_offset >= 0:
            follower_log.cut_back(plog, self.history, diverging.end_offset, self.high_watermark)
            return True
        appended, voters_changed = follower_log.append(plog, self.history, answer.records)
        if voters_changed:
            self.peers.voters_changed()
        if appended:
            self.partition.data_arrived()
        self.high_watermark = max(min(answer.high_watermark, plog.log_end_offset), 0)
        return True

    async def _begin_epoch(self, voter: int, epoch: int) -> None:
        try:
            result = await self.peers.begin_epoch(self.cluster_id, voter, epoch)
        finally:
            self._telling.discard(voter)
        if result is not None:
            self.observe(result.leader_epoch, result.leader_id)

    async def _end_epoch(self) -> None:
        others = [v for v in self.voters if v != self.node_id]
        successors = sorted(others, key=lambda v: -self.voter_ends.get(v, -1))
        await self.peers.end_epoch(self.cluster_id, self.election.epoch, successors)
