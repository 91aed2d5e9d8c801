"""The quorum's voters, as KRaft keeps them (KIP-853).

Static voters (`controller.quorum.voters`) are kraft.version 0: the set is the
setting, the same on every node, and never changes. Dynamic voters
(`controller.quorum.bootstrap.servers`) are kraft.version 1: the set is kept in the
metadata log itself, as control records (KRaftVersionRecord, then VotersRecord), and
changes when the leader appends a new VotersRecord (AddRaftVoter, RemoveRaftVoter).

A voter set takes effect where it is appended, before it is committed, as in KRaft: a
follower that cuts its log back past it goes back to the set before. The first set
comes from a bootstrap snapshot (`00000000000000000000-0000000000.checkpoint`, as
`kafka-storage format --standalone` or `--initial-controllers` writes it), which the
first leader copies into the log; a snapshot carries the set it was taken at.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kio.schema.types import BrokerId
from kio.schema.voters_record.v0 import data as schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, u16

from odradek.coordinator.runtime import Record
from odradek.protocol.batch import ATTR_CONTROL, build_batch, iter_batches, iter_records

KRAFT_VERSION_RECORD, VOTERS_RECORD = 5, 6  # control record types
BOOTSTRAP_SNAPSHOT = "00000000000000000000-0000000000.checkpoint"
SUPPORTED_KRAFT = (0, 1)  # the kraft.version levels this node can run
NO_DIRECTORY = uuid.UUID(int=0)
_write_voters = entity_writer(schema.VotersRecord)
_read_voters = entity_reader(schema.VotersRecord)


@dataclass(frozen=True)
class VoterNode:
    node_id: int
    directory_id: uuid.UUID = NO_DIRECTORY
    endpoints: tuple[tuple[str, str, int], ...] = ()  # (listener name, host, port)
    kraft_versions: tuple[int, int] = SUPPORTED_KRAFT

    def address(self, listener: str | None = None) -> tuple[str, int]:
        """Where to reach it: on `listener` if it has one by that name, else its first."""
        for name, host, port in self.endpoints:
            if listener is None or name == listener:
                return host, port
        if self.endpoints:
            return self.endpoints[0][1], self.endpoints[0][2]
        return "", 0


@dataclass(frozen=True)
class VoterSet:
    nodes: Mapping[int, VoterNode] = field(default_factory=dict)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def ids(self) -> list[int]:
        return sorted(self.nodes)

    def with_node(self, node: VoterNode) -> VoterSet:
        return VoterSet({**self.nodes, node.node_id: node})

    def without(self, node_id: int) -> VoterSet:
        return VoterSet({n: v for n, v in self.nodes.items() if n != node_id})

    def holds(self, node_id: int, directory_id: uuid.UUID | None) -> bool:
        """Whether (node_id, directory_id) is a voter (no directory id: a voter without)."""
        node = self.nodes.get(node_id)
        return node is not None and node.directory_id == (directory_id or NO_DIRECTORY)


def static_set(voters: Mapping[int, tuple[str, int]], listener: str) -> VoterSet:
    """controller.quorum.voters: ids and addresses, no directory ids."""
    return VoterSet(
        {
            node_id: VoterNode(node_id, NO_DIRECTORY, ((listener, host, port),))
            for node_id, (host, port) in voters.items()
        }
    )


# -- records ------------------------------------------------------------------------


def voters_value(voters: VoterSet) -> bytes:
    record = schema.VotersRecord(
        version=i16(0),
        voters=tuple(
            schema.Voter(
                voter_id=BrokerId(node.node_id),
                voter_directory_id=node.directory_id,
                endpoints=tuple(
                    schema.Endpoint(name=name, host=host, port=u16(port))
                    for name, host, port in node.endpoints
                ),
                k_raft_version_feature=schema.KRaftVersionFeature(
                    min_supported_version=i16(node.kraft_versions[0]),
                    max_supported_version=i16(node.kraft_versions[1]),
                ),
            )
            for node in sorted(voters.nodes.values(), key=lambda n: n.node_id)
        ),
    )
    out = io.BytesIO()
    _write_voters(out, record)
    return out.getvalue()


def parse_voters(value: bytes) -> VoterSet:
    record, _ = _read_voters(memoryview(value), 0)
    return VoterSet(
        {
            voter.voter_id: VoterNode(
                int(voter.voter_id),
                voter.voter_directory_id or NO_DIRECTORY,
                tuple((e.name, e.host, int(e.port)) for e in voter.endpoints),
                (
                    int(voter.k_raft_version_feature.min_supported_version),
                    int(voter.k_raft_version_feature.max_supported_version),
                ),
            )
            for voter in record.voters
        }
    )


def kraft_version_value(level: int) -> bytes:
    return struct.pack(">hhb", 0, level, 0)  # version, kraft.version, no tagged fields


def parse_kraft_version(value: bytes) -> int:
    return int(struct.unpack_from(">hh", value)[1])


def control_records(level: int | None, voters: VoterSet | None) -> list[Record]:
    """KRaftVersionRecord (level None: none) and VotersRecord (voters None: none), as
    (key, value) pairs of control records."""
    pairs: list[Record] = []
    if level is not None:
        pairs.append((struct.pack(">hh", 0, KRAFT_VERSION_RECORD), kraft_version_value(level)))
    if voters is not None:
        pairs.append((struct.pack(">hh", 0, VOTERS_RECORD), voters_value(voters)))
    return pairs


def voters_batch(level: int | None, voters: VoterSet, now_ms: int) -> bytes:
    return build_batch(control_records(level, voters), timestamp=now_ms, attributes=ATTR_CONTROL)


def found_in(data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int, bytes]]:
    """(offset, control type, value) of each KRaftVersion or Voters record in `data`."""
    for header in iter_batches(data):
        if not header.is_control:
            continue
        batch = memoryview(data)[header.position : header.position + header.size]
        for delta, key, value in iter_records(batch):
            if key is None or value is None or len(key) < 4:
                continue
            kind = struct.unpack_from(">h", key, 2)[0]
            if kind in (KRAFT_VERSION_RECORD, VOTERS_RECORD):
                yield header.base_offset + delta, kind, bytes(value)


# -- the history --------------------------------------------------------------------


class VoterHistory:
    """The voter sets and kraft.version levels a log holds, by the offset they take
    effect at (-1: from the bootstrap snapshot or the settings)."""

    def __init__(self, level: int, voters: VoterSet) -> None:
        self._sets: list[tuple[int, VoterSet]] = [(-1, voters)]
        self._levels: list[tuple[int, int]] = [(-1, level)]

    @property
    def voters(self) -> VoterSet:
        return self._sets[-1][1]

    @property
    def voters_offset(self) -> int:
        """Where the latest voter set was appended (-1: before the log)."""
        return self._sets[-1][0]

    @property
    def kraft_version(self) -> int:
        return self._levels[-1][1]

    def voters_at(self, offset: int) -> VoterSet:
        """The voter set in force at `offset` (a snapshot ending there holds it)."""
        found = self._sets[0][1]
        for at, voters in self._sets:
            if at < offset:
                found = voters
        return found

    def take(self, data: bytes | bytearray | memoryview) -> bool:
        """Note the control records of batches appended; True if the voters changed."""
        changed = False
        for offset, kind, value in found_in(data):
            if kind == VOTERS_RECORD:
                self._sets.append((offset, parse_voters(value)))
                changed = True
            else:
                self._levels.append((offset, parse_kraft_version(value)))
        return changed

    def truncate(self, offset: int) -> bool:
        """The log was cut back to end at `offset`: sets appended from there are gone."""
        before = len(self._sets)
        self._sets = [entry for entry in self._sets if entry[0] < offset] or self._sets[:1]
        self._levels = [entry for entry in self._levels if entry[0] < offset] or self._levels[:1]
        return len(self._sets) != before

    def restart_at(self, offset: int, snapshot: Iterable[tuple[int, bytes]]) -> None:
        """The log starts over at `offset`, from a snapshot holding these control
        records ((type, value) pairs)."""
        for kind, value in snapshot:
            if kind == VOTERS_RECORD:
                self._sets = [(offset - 1, parse_voters(value))]
            elif kind == KRAFT_VERSION_RECORD:
                self._levels = [(offset - 1, parse_kraft_version(value))]


def snapshot_control_records(data: bytes) -> list[tuple[int, bytes]]:
    """(type, value) of the KRaftVersion and Voters records in a snapshot's bytes."""
    return [(kind, value) for _, kind, value in found_in(data)]


def read_bootstrap(directory: Path) -> tuple[int, VoterSet | None] | None:
    """The bootstrap snapshot's kraft.version and voters (None: no such file)."""
    path = directory / BOOTSTRAP_SNAPSHOT
    if not path.exists():
        return None
    level, voters = 0, None
    for kind, value in snapshot_control_records(path.read_bytes()):
        if kind == VOTERS_RECORD:
            voters = parse_voters(value)
        else:
            level = parse_kraft_version(value)
    return level, voters
