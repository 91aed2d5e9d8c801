"""Reading everything back after the soak and checking it against what the workers were
acknowledged. Each check appends what it found wrong to a list of problems."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from soak.workload import (
    Commit,
    GroupMember,
    IdempotentWriter,
    Outcome,
    TransactionalWriter,
    position,
)

READ_TIMEOUT = 120.0
EXAMPLES = 5  # how many items a problem message names


@dataclass(frozen=True)
class Stored:
    partition: int
    offset: int
    value: bytes


def _consumer(bootstrap: str, **config: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "soak-reader",
            "enable.auto.commit": False,
            **config,
        }
    )


def wait_no_open_transaction(bootstrap: str, topic: str, partitions: int, timeout: float) -> bool:
    """True once every partition's last stable offset has reached its high watermark
    (markers of the last transactions are written after EndTxn is answered)."""
    committed = _consumer(bootstrap, **{"isolation.level": "read_committed"})
    uncommitted = _consumer(bootstrap, **{"isolation.level": "read_uncommitted"})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                settled = all(
                    committed.get_watermark_offsets(TopicPartition(topic, p), 10, cached=False)[1]
                    == uncommitted.get_watermark_offsets(
                        TopicPartition(topic, p), 10, cached=False
                    )[1]
                    for p in range(partitions)
                )
            except KafkaException:
                settled = False
            if settled:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
    finally:
        committed.close()
        uncommitted.close()


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[Stored]:
    """Every record of ``topic`` a read_committed consumer sees, up to the end."""
    consumer = _consumer(
        bootstrap, **{"isolation.level": "read_committed", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records: list[Stored] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + READ_TIMEOUT
    try:
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{topic}: read {len(records)} records, partitions at the end: "
                    f"{sorted(at_end)} of {partitions} after {READ_TIMEOUT:.0f} s"
                )
            for msg in consumer.consume(1000, 0.5):
                error = msg.error()
                if error is None:
                    partition, offset = position(msg)
                    records.append(Stored(partition, offset, msg.value() or b""))
                    at_end.discard(partition)
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(position(msg)[0])
    finally:
        consumer.close()
    return records


def committed_offsets(
    bootstrap: str, groups: list[str], topic: str, partitions: int
) -> dict[tuple[str, int], int]:
    """The groups' committed offsets (OffsetFetch) by (group, partition); -1001 for none."""
    return {
        (group, partition): offset
        for group in groups
        for partition, offset in _group_offsets(bootstrap, group, topic, partitions).items()
    }


def _group_offsets(
    bootstrap: str, group: str, topic: str, partitions: int, timeout: float = 60.0
) -> dict[int, int]:
    consumer = _consumer(bootstrap, **{"group.id": group})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                answer = consumer.committed(
                    [TopicPartition(topic, p) for p in range(partitions)], timeout=10
                )
                if all(tp.error is None for tp in answer):
                    return {tp.partition: tp.offset for tp in answer}
                failure = str([tp.error for tp in answer if tp.error is not None][0])
            except KafkaException as exc:
                failure = str(exc)
            if time.monotonic() > deadline:
                raise TimeoutError(f"OffsetFetch of {group} failed for {timeout:.0f} s: {failure}")
            time.sleep(0.2)
    finally:
        consumer.close()


@dataclass
class IdempotentFigures:
    acknowledged: int = 0
    found: int = 0
    failed: int = 0  # delivery reported as failed (allowed: not acknowledged)


def check_idempotent(
    writers: list[IdempotentWriter], stored: list[Stored], problems: list[str]
) -> IdempotentFigures:
    """Each acknowledged (producer, sequence) is stored exactly once; each producer's
    records keep their order within a partition; offsets are contiguous from 0."""
    figures = IdempotentFigures(
        acknowledged=sum(len(w.acked) for w in writers), failed=sum(w.failed for w in writers)
    )
    counts: Counter[tuple[str, int]] = Counter()
    last_seq: dict[tuple[str, int], int] = {}
    out_of_order: list[str] = []
    by_partition: dict[int, list[int]] = defaultdict(list)
    for record in sorted(stored, key=lambda r: (r.partition, r.offset)):
        by_partition[record.partition].append(record.offset)
        name, seq_text = record.value.decode().rsplit(":", 1)
        seq = int(seq_text)
        counts[(name, seq)] += 1
        previous = last_seq.get((name, record.partition), -1)
        if seq <= previous:
            out_of_order.append(f"{name}:{seq} after {name}:{previous} at offset {record.offset}")
        last_seq[(name, record.partition)] = seq
    figures.found = len(counts)

    for writer in writers:
        missing = sorted(s for s in writer.acked if (writer.name, s) not in counts)
        if missing:
            problems.append(
                f"{writer.name}: {len(missing)} acknowledged records missing, e.g. "
                + ", ".join(
                    f"seq {s} (acknowledged by broker run {writer.acked[s]})"
                    for s in missing[:EXAMPLES]
                )
            )
        unsent = sorted(s for (n, s) in counts if n == writer.name and s >= writer.sent)
        if unsent:
            problems.append(f"{writer.name}: records never sent are stored: {unsent[:EXAMPLES]}")
    doubled = sorted(key for key, count in counts.items() if count > 1)
    if doubled:
        problems.append(
            f"{len(doubled)} idempotent records stored more than once, e.g. "
            + ", ".join(f"{n}:{s} x{counts[(n, s)]}" for n, s in doubled[:EXAMPLES])
        )
    if out_of_order:
        problems.append(
            f"{len(out_of_order)} idempotent records out of order, e.g. {out_of_order[:EXAMPLES]}"
        )
    for partition, offsets in sorted(by_partition.items()):
        if offsets != list(range(len(offsets))):
            gaps = [o for i, o in enumerate(offsets) if o != i][:EXAMPLES]
            problems.append(f"data partition {partition}: offsets not contiguous from 0 at {gaps}")
    return figures


@dataclass
class TransactionFigures:
    committed: int = 0
    aborted: int = 0
    in_doubt_landed: int = 0
    in_doubt_vanished: int = 0
    records_expected: int = 0  # records of committed transactions
    records_found: int = 0
    producers_replaced: int = 0


def check_transactions(
    writers: list[TransactionalWriter], stored: list[Stored], problems: list[str]
) -> TransactionFigures:
    """Committed transactions are whole, aborted ones invisible, transactions in doubt
    all or nothing; no record appears twice."""
    figures = TransactionFigures(producers_replaced=sum(w.replaced for w in writers))
    seen: dict[tuple[str, int], Counter[int]] = defaultdict(Counter)
    for record in stored:
        name, number, index = record.value.decode().rsplit(":", 2)
        seen[(name, int(number))][int(index)] += 1
    figures.records_found = len(stored)
    known: set[tuple[str, int]] = set()
    wrong: list[str] = []
    for writer in writers:
        for txn in writer.transactions:
            key = (writer.name, txn.number)
            known.add(key)
            got = seen.get(key, Counter())
            label = (
                f"{writer.name} #{txn.number} ({txn.outcome.value} in broker run {txn.broker_run})"
            )
            if any(count > 1 for count in got.values()):
                wrong.append(f"{label}: records doubled {dict(got)}")
            whole = set(got) == set(range(txn.size))
            if txn.outcome is Outcome.COMMITTED:
                figures.committed += 1
                figures.records_expected += txn.size
                if not whole:
                    wrong.append(f"{label}: {len(got)} of {txn.size} records visible")
            elif txn.outcome is Outcome.ABORTED:
                figures.aborted += 1
                if got:
                    wrong.append(f"{label}: {len(got)} of {txn.size} records visible")
            elif whole:
                figures.in_doubt_landed += 1
                figures.records_expected += txn.size
            elif not got:
                figures.in_doubt_vanished += 1
            else:
                wrong.append(f"{label}: {len(got)} of {txn.size} records visible")
    strangers = sorted(set(seen) - known)
    if strangers:
        wrong.append(f"records of transactions never run: {strangers[:EXAMPLES]}")
    if wrong:
        problems.append(f"{len(wrong)} transactions broken, e.g.: " + "; ".join(wrong[:EXAMPLES]))
    return figures


def last_commits(members: list[GroupMember]) -> dict[tuple[str, int], Commit]:
    """The last acknowledged commit of each (group, partition) so far."""
    last: dict[tuple[str, int], Commit] = {}
    for member in members:
        for commit in list(member.commits):
            key = (commit.group, commit.partition)
            if key not in last or commit.at > last[key].at:
                last[key] = commit
    return last


def check_fetched_offsets(
    last: dict[tuple[str, int], Commit],
    fetched: dict[tuple[str, int], int],
    when: str,
    problems: list[str],
) -> int:
    """OffsetFetch gives at least the last acknowledged commit of each partition;
    the number of partitions checked."""
    for (group, partition), commit in sorted(last.items()):
        offset = fetched.get((group, partition), -1)
        if offset < commit.offset:
            problems.append(
                f"{when}: {group} partition {partition}: OffsetFetch gives {offset}, behind "
                f"the commit of {commit.offset} acknowledged in broker run {commit.broker_run}"
            )
    return len(last)


def check_commit_order(members: list[GroupMember], problems: list[str]) -> int:
    """Acknowledged commits of a group partition never go backwards (a group that
    starts again from an older offset has lost a commit); the number of commits."""
    by_partition: dict[tuple[str, int], list[Commit]] = defaultdict(list)
    for member in members:
        for commit in member.commits:
            by_partition[(commit.group, commit.partition)].append(commit)
    backwards: list[str] = []
    for (group, partition), commits in sorted(by_partition.items()):
        commits.sort(key=lambda c: c.at)
        for before, after in zip(commits, commits[1:], strict=False):
            if after.offset < before.offset:
                backwards.append(
                    f"{group} partition {partition}: {after.offset} (broker run "
                    f"{after.broker_run}) after {before.offset} (broker run {before.broker_run})"
                )
    if backwards:
        problems.append(
            f"{len(backwards)} acknowledged commits went backwards, e.g. "
            + "; ".join(backwards[:EXAMPLES])
        )
    return sum(len(c) for c in by_partition.values())
