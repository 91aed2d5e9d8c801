"""Kafka's checks of the replicas a client places by hand (CreateTopics assignments,
CreatePartitions assignments) and of a partition count, in its words (its
ReplicationControlManager). `registered` and `live` are the node ids of the registered
and of the unfenced brokers; None leaves the checks of brokers to the controller."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from odradek.protocol.errors import ErrorCode

Problem = tuple[ErrorCode, str]


def replicas_problem(
    replicas: Sequence[int], registered: Collection[int] | None, factor: int | None
) -> str | None:
    """What is wrong with one partition's replicas: none, an unknown broker, a broker
    twice, or a count unlike the other partitions' (`factor`)."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(replicas):
        if registered is not None and broker not in registered:
            return (
                f"The manual partition assignment includes broker {broker}, but no such "
                "broker is registered."
            )
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    if factor is not None and len(replicas) != factor:
        return (
            f"The manual partition assignment includes a partition with {len(replicas)} "
            "replica(s), but this is not consistent with previous partitions, which have "
            f"{factor} replica(s)."
        )
    return None


def _fenced(index: int) -> Problem:
    return (
        ErrorCode.invalid_replica_assignment,
        f"All brokers specified in the manual partition assignment for partition {index} "
        "are fenced or in controlled shutdown.",
    )


def topic_assignments_problem(
    num_partitions: int,
    replication_factor: int,
    assignments: Sequence[tuple[int, Sequence[int]]],
    registered: Collection[int] | None,
    live: Collection[int] | None,
) -> Problem | None:
    """A new topic's assignments ((partition index, replicas) in request order): they
    need partitions and replication factor -1, each partition once, numbered from 0."""
    if replication_factor != -1:
        return (
            ErrorCode.invalid_request,
            "A manual partition assignment was specified, but replication factor was not "
            "set to -1.",
        )
    if num_partitions != -1:
        return (
            ErrorCode.invalid_request,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
    seen: set[int] = set()
    factor = None
    for index, replicas in assignments:
        if index in seen:
            return (
                ErrorCode.invalid_replica_assignment,
                f"Found multiple manual partition assignments for partition {index}",
            )
        problem = replicas_problem(replicas, registered, factor)
        if problem is not None:
            return ErrorCode.invalid_replica_assignment, problem
        factor = len(replicas)
        if live is not None and not set(replicas) & set(live):
            return _fenced(index)
        seen.add(index)
    if seen != set(range(len(seen))):
        return (
            ErrorCode.invalid_replica_assignment,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return None


def new_partitions_problem(
    name: str,
    have: int,
    count: int,
    factor: int,
    assignments: Sequence[Sequence[int]] | None,
    registered: Collection[int] | None,
    live: Collection[int] | None,
) -> Problem | None:
    """Growing a topic of `have` partitions (of `factor` replicas) to `count`."""
    if count == have:
        return ErrorCode.invalid_partitions, f"Topic already has {have} partition(s)."
    if count < have:
        return (
            ErrorCode.invalid_partitions,
            f"The topic {name} currently has {have} partition(s); {count} would not be an "
            "increase.",
        )
    if assignments is None:
        return None
    if len(assignments) != count - have:
        return (
            ErrorCode.invalid_replica_assignment,
            f"Attempted to add {count - have} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified.",
        )
    for index, replicas in enumerate(assignments, start=have):
        problem = replicas_problem(replicas, registered, factor)
        if problem is not None:
            return ErrorCode.invalid_replica_assignment, problem
        if live is not None and not set(replicas) & set(live):
            return _fenced(index)
    return None
