"""Adding and removing a voter of a dynamic quorum (KIP-853), as the leader does them
for AddRaftVoter and RemoveRaftVoter, with KRaft's checks in KRaft's order and words:

- one change at a time: while one is under way, REQUEST_TIMED_OUT;
- kraft.version 0 (static voters): UNSUPPORTED_VERSION (UpdateRaftVoter: see below);
- while the latest voter set is not committed: REQUEST_TIMED_OUT;
- adding a voter id already in the set: DUPLICATE_VOTER; removing one that is not
  (with its directory id): VOTER_NOT_FOUND;
- a new voter must answer ApiVersions on the controller listener with a kraft.version
  range that holds the quorum's, and must have fetched the log up to the high
  watermark (as an observer) in the last hour: else REQUEST_TIMED_OUT or
  INVALID_REQUEST.

Then the leader appends the new voter set (it counts from there on) and answers once
it is committed. A leader that removed itself resigns once its removal is committed
(quorum.py).

UpdateRaftVoter changes a voter's endpoints and kraft.version range. With static
voters (kraft.version 0) the leader keeps what each voter tells it in memory (every
voter tells each new leader, see controller.py); an upgrade to kraft.version 1
(UpdateFeatures) turns the static voters into dynamic ones with what they told, and
is refused unless every voter said it supports version 1, as KRaft's leader does.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from odradek.broker.cluster.node_client import NodeClient, NodeUnreachable
from odradek.broker.cluster.quorum.quorum import Deposed
from odradek.broker.cluster.quorum.voters import NO_DIRECTORY, VoterNode, VoterSet
from odradek.broker.dataplane.log_dirs import kafka_uuid
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.quorum.quorum import Quorum

API_VERSIONS = 18
CAUGHT_UP_WITHIN_MS = 3_600_000  # an observer that fetched to the end in the last hour
Outcome = tuple[ErrorCode, str | None]


def replica_key(node_id: int, directory_id: uuid.UUID | None) -> str:
    """As KRaft prints a replica: ReplicaKey(id=1, directoryId=Optional[...])."""
    if directory_id in (None, NO_DIRECTORY):
        return f"ReplicaKey(id={node_id}, directoryId=Optional.empty)"
    return f"ReplicaKey(id={node_id}, directoryId=Optional[{kafka_uuid(directory_id)}])"


def _keys(voters: VoterSet) -> str:
    return (
        "[" + ", ".join(replica_key(n.node_id, n.directory_id) for n in voters.nodes.values()) + "]"
    )


class VoterChanges:
    """The leader's voter changes; at most one under way."""

    def __init__(self, quorum: Quorum, me: VoterNode) -> None:
        self.quorum = quorum
        self.me = me
        self.pending = False
        # kraft.version 0: what this leader heard of each voter (UpdateRaftVoter), for an
        # upgrade to kraft.version 1; kept for one leader epoch, as KRaft keeps it
        self._heard: dict[int, VoterNode] = {}
        self._heard_in = -1

    def _refused(self, verb: str) -> Outcome | None:
        quorum = self.quorum
        if self.pending:
            return (
                ErrorCode.request_timed_out,
                "Request timed out waiting for leader to handle previous voter change request",
            )
        if quorum.kraft_version == 0:
            return (
                ErrorCode.unsupported_version,
                f"Cluster doesn't support {verb} voter because the kraft.version feature is 0",
            )
        history = quorum.history
        if history.voters_offset >= quorum.high_watermark:
            return (
                ErrorCode.request_timed_out,
                "Request timed out waiting for voters to commit the latest voter change at "
                f"Optional[{history.voters_offset}] with HWM {quorum.high_watermark}",
            )
        return None

    async def add(self, node: VoterNode, observed: Any, ack_when_committed: bool) -> Outcome:
        """`observed`: the leader's record of the new voter's fetches (None: none)."""
        refused = self._refused("adding")
        if refused is not None:
            return refused
        voters = self.quorum.history.voters
        key = replica_key(node.node_id, node.directory_id)
        if node.node_id in voters:
            return (
                ErrorCode.duplicate_voter,
                f"The voter id for {key} is already part of the set of voters {_keys(voters)}.",
            )
        self.pending = True
        try:
            supported = await self._kraft_versions(node)
            if supported is None:
                return (
                    ErrorCode.request_timed_out,
                    "Aborted add voter operation for since API_VERSIONS returned an error "
                    "NETWORK_EXCEPTION",
                )
            level = self.quorum.kraft_version
            if not supported[0] <= level <= supported[1]:
                return (
                    ErrorCode.invalid_request,
                    f"Aborted add voter operation for {key} since the kraft.version range "
                    f"(min: {supported[0]}, max: {supported[1]} doesn't support the "
                    f"finalized version {level}",
                )
            now_ms = int(time.time() * 1000)
            if (
                observed is None
                or observed.caught_up_ms <= 0
                or observed.last_seen_ms < now_ms - CAUGHT_UP_WITHIN_MS
            ):
                return (
                    ErrorCode.request_timed_out,
                    f"Aborted add voter operation for {key} since it is lagging behind",
                )
            new = VoterNode(node.node_id, node.directory_id, node.endpoints, supported)
            return await self._append(voters.with_node(new), ack_when_committed)
        finally:
            self.pending = False

    async def remove(self, node_id: int, directory_id: uuid.UUID | None) -> Outcome:
        refused = self._refused("removing")
        if refused is not None:
            return refused
        voters = self.quorum.history.voters
        if not voters.holds(node_id, directory_id) or len(voters) == 1:
            return (
                ErrorCode.voter_not_found,
                f"Cannot remove voter {replica_key(node_id, directory_id)} from the set of "
                f"voters {_keys(voters)}",
            )
        self.pending = True
        try:
            return await self._append(voters.without(node_id), True)
        finally:
            self.pending = False

    def update(self, node: VoterNode) -> ErrorCode:
        """UpdateRaftVoter: a voter's new endpoints and kraft.version range, answered as
        soon as they are appended (as KRaft does); at kraft.version 0, kept in memory
        for an upgrade (the voter is found by id: static voters have no directory)."""
        quorum = self.quorum
        if self.pending:
            return ErrorCode.request_timed_out
        static = quorum.kraft_version == 0
        if not static and quorum.history.voters_offset >= quorum.high_watermark:
            return ErrorCode.request_timed_out
        low, high = node.kraft_versions
        if not low <= quorum.kraft_version <= high:
            return ErrorCode.invalid_request
        if not any(name == quorum.peers.listener for name, _, _ in node.endpoints):
            return ErrorCode.invalid_request
        voters = quorum.history.voters
        found = node.node_id in voters if static else voters.holds(node.node_id, node.directory_id)
        if not found:
            return ErrorCode.voter_not_found
        if static:
            self.heard()[node.node_id] = node
        else:
            quorum.append_voters(voters.with_node(node))
        return ErrorCode.none

    def heard(self) -> dict[int, VoterNode]:
        """The voters as heard of in this leader epoch (this leader as it is)."""
        if self._heard_in != self.quorum.leader_epoch:
            self._heard = {self.me.node_id: self.me}
            self._heard_in = self.quorum.leader_epoch
        return self._heard

    async def upgrade(self, level: int, validate_only: bool) -> Outcome:
        """kraft.version `level` (UpdateFeatures): from 0 to 1, the static voters become
        dynamic ones, with the directory ids, endpoints and kraft.version ranges they
        told this leader, in a KRaftVersionRecord and a VotersRecord, as KRaft's
        leader writes them; refused unless every voter told it that it supports 1."""
        quorum = self.quorum
        if level <= quorum.kraft_version:
            return ErrorCode.none, None
        if self.pending or quorum.history.voters_offset >= quorum.high_watermark:
            return ErrorCode.request_timed_out, "a voter change is under way"
        if level != 1:
            return (
                ErrorCode.invalid_update_version,
                f"Invalid upgrade of kraft.version from version {quorum.kraft_version} to {level}",
            )
        heard = self.heard()
        upgraded = VoterSet(
            {
                voter.node_id: heard.get(voter.node_id, replace(voter, kraft_versions=(0, 0)))
                for voter in quorum.history.voters.nodes.values()
            }
        )
        if not all(low <= level <= high for low, high in _ranges(upgraded)):
            return (
                ErrorCode.invalid_update_version,
                f"Invalid upgrade of kraft.version to {level} because not all of the voters "
                "support it",
            )
        if any(n.directory_id == NO_DIRECTORY for n in upgraded.nodes.values()):
            return (
                ErrorCode.unknown_server_error,
                f"Directory id must be known for all of the voters: {_keys(upgraded)}",
            )
        if validate_only:
            return ErrorCode.none, None
        self.pending = True
        try:
            offset = quorum.append_voters(upgraded, level=level)
            await quorum.wait_for(offset + 1)
        except Deposed:
            return ErrorCode.not_controller, "the leader changed before it committed"
        finally:
            self.pending = False
        return ErrorCode.none, None

    async def _append(self, new: VoterSet, ack_when_committed: bool) -> Outcome:
        quorum = self.quorum
        offset = quorum.append_voters(new)
        if not ack_when_committed:
            return ErrorCode.none, None
        try:
            await quorum.wait_for(offset + 1)
        except Deposed:
            return ErrorCode.not_leader_or_follower, "the leader changed before it committed"
        return ErrorCode.none, None

    async def _kraft_versions(self, node: VoterNode) -> tuple[int, int] | None:
        """The kraft.version range the new voter supports, from its ApiVersions."""
        host, port = node.address(self.quorum.peers.listener)
        client = NodeClient(host, port, 5.0)
        try:
            answer = await client.call(
                API_VERSIONS, 4, {"client_software_name": "odradek", "client_software_version": "1"}
            )
        except NodeUnreachable:
            return None
        finally:
            client.close()
        if answer.error_code != ErrorCode.none:
            return None
        for feature in answer.supported_features or ():
            if feature.name == "kraft.version":
                return int(feature.min_version), int(feature.max_version)
        return 0, 0


def _ranges(voters: VoterSet) -> list[tuple[int, int]]:
    return [node.kraft_versions for node in voters.nodes.values()]
