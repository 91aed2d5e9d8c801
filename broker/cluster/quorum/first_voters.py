"""Where a controller's voter set comes from when it starts.

- `controller.quorum.voters`: those, for good (kraft.version 0).
- `controller.quorum.bootstrap.servers` (kraft.version 1): the voter sets the metadata
  log holds, read back at every start (the bootstrap snapshot, the latest snapshot,
  then the log's own control records).

A new dynamic controller writes the bootstrap snapshot first, as `kafka-storage
format` would, with the first voters its command line names: `--standalone` (itself),
`--initial-controllers id@host:port:directory-id,...`, or `--no-initial-controllers`
(none: it observes until `kafka-metadata-quorum add-controller` adds it). Without
any of these, a controller that is the only bootstrap server starts standalone, and
one of several joins as an observer. A metadata directory `kafka-storage format`
already wrote is read as it is.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.broker.cluster.quorum import snapshots
from odradek.broker.cluster.quorum.snapshots import SnapshotId
from odradek.broker.cluster.quorum.voters import (
    BOOTSTRAP_SNAPSHOT,
    VoterHistory,
    VoterNode,
    VoterSet,
    control_records,
    read_bootstrap,
    snapshot_control_records,
    static_set,
)
from odradek.broker.dataplane.log_dirs import parse_kafka_uuid

if TYPE_CHECKING:
    from odradek.storage.log import PartitionLog

Endpoints = tuple[tuple[str, str, int], ...]


class FirstVotersError(ValueError):
    """--initial-controllers cannot be read; the message says why."""


def parse_initial_controllers(text: str, listener: str) -> VoterSet:
    """`id@host:port:directory-id,...`, as kafka-storage format takes them."""
    nodes = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        node, at, rest = entry.partition("@")
        address, _, directory = rest.rpartition(":")
        host, _, port = address.rpartition(":")
        try:
            node_id, port_number = int(node), int(port)
            directory_id = parse_kafka_uuid(directory)
        except ValueError as exc:
            raise FirstVotersError(
                f"--initial-controllers: {entry!r} is not id@host:port:directory-id"
            ) from exc
        if not at or not host:
            raise FirstVotersError(
                f"--initial-controllers: {entry!r} is not id@host:port:directory-id"
            )
        nodes[node_id] = VoterNode(
            node_id, directory_id, ((listener, host.strip("[]"), port_number),)
        )
    if not nodes:
        raise FirstVotersError("--initial-controllers names no controller")
    return VoterSet(nodes)


def _is_self(address: tuple[str, int], endpoints: Endpoints, hosts: Sequence[str]) -> bool:
    host, port = address
    return any(
        port == own_port and (host == own_host or host in hosts)
        for _, own_host, own_port in endpoints
    )


def _first_voters(
    initial: str,
    me: VoterNode,
    bootstrap_servers: Sequence[tuple[str, int]],
    listener: str,
) -> VoterSet:
    if initial == "standalone":
        return VoterSet({me.node_id: me})
    if initial == "none":
        return VoterSet()
    if initial:
        voters = parse_initial_controllers(initial, listener)
        if me.node_id in voters.nodes:  # this node's own endpoints, as it advertises them
            voters = voters.with_node(
                VoterNode(me.node_id, voters.nodes[me.node_id].directory_id, me.endpoints)
            )
        return voters
    hosts = ("localhost", "127.0.0.1", socket.gethostname())
    if len(bootstrap_servers) == 1 and _is_self(bootstrap_servers[0], me.endpoints, hosts):
        return VoterSet({me.node_id: me})
    return VoterSet()


def write_bootstrap(directory: Path, voters: VoterSet) -> None:
    """The bootstrap snapshot, as kafka-storage format writes it: kraft.version 1 and
    the first voters (none: that record is left out)."""
    control = control_records(1, voters if len(voters) else None)
    snapshots.write(directory, SnapshotId(0, 0), [], int(time.time() * 1000), control)


def listed_directory_id(initial: str, node_id: int, listener: str) -> uuid.UUID | None:
    """The directory id `--initial-controllers` gives this node, if it names it."""
    if initial in ("", "standalone", "none"):
        return None
    node = parse_initial_controllers(initial, listener).nodes.get(node_id)
    return None if node is None else node.directory_id


def voter_history(
    *,
    static_voters: dict[int, tuple[str, int]],
    listener: str,
    me: VoterNode,
    bootstrap_servers: Sequence[tuple[str, int]],
    initial: str,
    log: PartitionLog,
) -> VoterHistory:
    directory = Path(log.directory)
    if static_voters:  # (until an upgrade to kraft.version 1 wrote voters in the log)
        history = VoterHistory(0, static_set(static_voters, listener))
    else:
        found = read_bootstrap(directory)
        if found is None:
            fresh = log.log_end_offset == 0 and not snapshots.listed(directory)
            # a log begun before voters were kept in it: this controller was its only voter
            voters = (
                _first_voters(initial, me, bootstrap_servers, listener)
                if fresh
                else VoterSet({me.node_id: me})
            )
            if fresh:
                write_bootstrap(directory, voters)
            found = (1, voters)
        level, first = found
        history = VoterHistory(level, first or VoterSet())
    latest = snapshots.latest(directory)
    if latest is not None and latest.file_name != BOOTSTRAP_SNAPSHOT:
        data = (directory / latest.file_name).read_bytes()
        history.restart_at(latest.end_offset, snapshot_control_records(data))
    for header, batch in log.iter_batches(log.log_start_offset):
        if header.is_control:
            history.take(batch)
    return history
