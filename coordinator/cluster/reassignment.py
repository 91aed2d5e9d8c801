"""Partition changes as Kafka's controller builds them, reassignments among them.

A reassignment goes in three steps (Kafka's ReplicationControlManager):
1. the partition's replicas become the target replicas followed by those leaving
   (`removing`), the new ones listed in `adding`; the new replicas start fetching;
2. the leader adds each new replica to the ISR once it has caught up;
3. as soon as the ISR holds every target replica, the same change completes it:
   replicas = the target, the leaving ones out of the ISR, a new leader (and a new
   leader epoch) if the old one leaves. The leaving replicas stop and delete their copy.

A reassignment that only reorders the replicas, or whose target is already in sync,
completes at once. Cancelling one (null replicas) puts back the original replicas and
drops the new ones from the ISR.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from odradek.coordinator.cluster import directories
from odradek.coordinator.cluster import records as rec
from odradek.coordinator.cluster.assignments import replicas_problem
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

NO_LEADER = rec.NO_LEADER


class ReassignmentError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def change_partition(
    current: rec.PartitionValue,
    live: Collection[int],
    *,
    isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    unclean: bool = False,
) -> rec.PartitionValue | None:
    """The partition after a change of its ISR or replicas (None: nothing changes), as
    Kafka's PartitionChangeBuilder makes it: a reassignment completes when it can, the
    leader stays while it is live and in sync, else the first live in-sync replica
    leads (any live one, alone in the ISR, when `unclean`)."""
    target_isr = tuple(current.isr if isr is None else isr)
    target_replicas = tuple(current.replicas if replicas is None else replicas)
    target_adding = tuple(current.adding if adding is None else adding)
    target_removing = tuple(current.removing if removing is None else removing)
    if target_adding or target_removing:
        done = _completed(target_replicas, target_isr, target_removing)
        if done is not None:
            target_replicas, target_isr = done
            target_adding = target_removing = ()
    leader = current.leader
    if leader not in target_isr or leader not in live:
        leader = next((r for r in target_replicas if r in target_isr and r in live), NO_LEADER)
        if leader == NO_LEADER and unclean:
            leader = next((r for r in target_replicas if r in live), NO_LEADER)
            if leader != NO_LEADER:
                target_isr = (leader,)
    # a replica leaving for good ends the leader's epoch, as a new leader does
    new_epoch = leader != current.leader or not set(current.replicas) <= set(target_replicas)
    changed = rec.PartitionValue(
        target_replicas,
        target_isr,
        leader,
        current.leader_epoch + (1 if new_epoch else 0),
        current.partition_epoch,
        target_adding,
        target_removing,
        current.directories_of(target_replicas),
    )
    if changed == current:
        return None
    return replace(changed, partition_epoch=current.partition_epoch + 1)


def _completed(
    replicas: tuple[int, ...], isr: tuple[int, ...], removing: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(replicas, ISR) once the reassignment is complete: every replica that stays is
    in sync."""
    staying = tuple(r for r in replicas if r not in removing)
    staying_isr = tuple(r for r in isr if r not in removing)
    if not staying or not staying_isr or not set(staying) <= set(staying_isr):
        return None
    return staying, staying_isr


def original_replicas(partition: rec.PartitionValue) -> tuple[int, ...]:
    return tuple(r for r in partition.replicas if r not in partition.adding)


def current_factor(partition: rec.PartitionValue) -> int:
    """The replication factor the partition has (the original one while it moves)."""
    return len(original_replicas(partition))


def reassign(
    topic: str,
    index: int,
    current: rec.PartitionValue,
    target: Sequence[int] | None,
    registered: Collection[int],
    live: Collection[int],
    allow_factor_change: bool = True,
    unclean: bool = False,
) -> rec.PartitionValue | None:
    """The partition once a reassignment to `target` starts (None: no change), or
    once a cancel (`target` None) reverts it. Raises ReassignmentError."""
    if target is None:
        return _cancel(topic, index, current, live, unclean)
    problem = replicas_problem(target, registered, None)
    if problem is not None:
        raise ReassignmentError(ErrorCode.invalid_replica_assignment, problem)
    if not allow_factor_change and current_factor(current) != len(target):
        raise ReassignmentError(
            ErrorCode.invalid_replication_factor,
            f"The replication factor is changed from {current_factor(current)} to {len(target)}",
        )
    removing = sorted(set(current.replicas) - set(target))
    adding = sorted(set(target) - set(current.replicas))
    replicas = (*target, *removing)
    return change_partition(
        current,
        live,
        replicas=None if replicas == current.replicas else replicas,
        adding=adding or None,
        removing=removing or None,
    )


def _cancel(
    topic: str, index: int, current: rec.PartitionValue, live: Collection[int], unclean: bool
) -> rec.PartitionValue | None:
    if not current.reassigning:
        code = ErrorCode.no_reassignment_in_progress
        raise ReassignmentError(code, "No partition reassignment is in progress.")
    replicas = original_replicas(current)
    isr = [r for r in current.isr if r not in current.adding]
    if not isr:
        if not unclean:
            raise ReassignmentError(
                ErrorCode.invalid_replica_assignment,
                f"Unable to revert partition assignment for {topic}:{index} because it would "
                "require an unclean leader election.",
            )
        isr = [replicas[0]]
    return change_partition(
        current, live, isr=isr, replicas=replicas, adding=(), removing=(), unclean=unclean
    )


def alter(shard: Any, topic: str, index: int, request: dict[str, Any]) -> Result[dict[str, Any]]:
    """One partition of AlterPartitionReassignments on the controller's shard
    (coordinator/cluster/shard.py). request: replicas (None: cancel),
    allow_replication_factor_change."""
    state = shard.topics.get(topic)
    current = None if state is None else state.partitions.get(index)
    if current is None:
        message = (
            f"Unable to find a topic named {topic}."
            if state is None
            else f"Unable to find partition {topic}:{index}."
        )
        code = ErrorCode.unknown_topic_or_partition
        return Result([], {"error_code": code, "error_message": message})
    try:
        changed = reassign(
            topic,
            index,
            current,
            request.get("replicas"),
            shard.brokers,
            shard.live_brokers(),
            request.get("allow_replication_factor_change", True),
            shard.unclean(topic),
        )
    except ReassignmentError as exc:
        return Result([], {"error_code": exc.code, "error_message": exc.message})
    records: list[Record] = []
    if changed is not None:  # a new replica on a broker of one directory lies in it
        changed = directories.with_defaults(shard, changed)
        records.append(shard.partition_changed(topic, index, changed))
    return Result(records, {"error_code": ErrorCode.none, "error_message": None})


def ongoing(
    topics: dict[str, Any], wanted: Sequence[tuple[str, Sequence[int]]] | None
) -> list[tuple[str, list[tuple[int, rec.PartitionValue]]]]:
    """The reassignments in progress: of every topic (`wanted` None), or of the
    partitions asked for (unknown ones left out), topics without any left out."""
    if wanted is None:
        wanted = [(name, sorted(state.partitions)) for name, state in topics.items()]
    found = []
    for name, indexes in wanted:
        state = topics.get(name)
        if state is None:
            continue
        moving = [
            (i, p) for i in indexes if (p := state.partitions.get(i)) is not None and p.reassigning
        ]
        if moving:
            found.append((name, moving))
    return found
