"""Scenarios of the group and transaction coordinators: FindCoordinator, the classic
group protocol's errors, offsets, InitProducerId, EndTxn, AddOffsetsToTxn and the
transaction admin APIs."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_topics import quietly_create

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT = 8, 9, 10, 11, 12
LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 13, 14, 15, 16
INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, DELETE_GROUPS, OFFSET_DELETE = 22, 25, 26, 42, 47
LIST_TRANSACTIONS = 66
NOT_READY = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


def find(run: Run, key_type: int, *keys: str) -> Any:
    return run.call(FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": list(keys)})


def ready(run: Run, key_type: int, key: str) -> None:
    """Until the coordinator of `key` is found and loaded (Kafka creates its topic on
    first use, then loads the partition)."""
    run.until(
        lambda: run.quiet(FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]}),
        lambda answer: answer.coordinators[0].error_code == 0,
        timeout=30,
    )
    if key_type == 0:
        run.until(
            lambda: run.quiet(
                DESCRIBE_GROUPS, 5, {"groups": [key], "include_authorized_operations": False}
            ),
            lambda answer: answer.groups[0].error_code not in NOT_READY,
            timeout=30,
        )
    else:  # (DescribeTransactions of an unknown id carries a start time kio cannot read)
        body = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
        run.until(
            lambda: run.quiet(LIST_TRANSACTIONS, 1, body),
            lambda answer: answer.error_code not in NOT_READY,
            timeout=30,
        )


def join(run: Run, group: str, member_id: str = "", **fields: Any) -> Any:
    body = {
        "group_id": group,
        "session_timeout": 10000,
        "rebalance_timeout": 10000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
        **fields,
    }
    return run.call(JOIN_GROUP, 9, body)


@scenario("find-coordinator.key-types", "group, transaction and share keys; bad key types")
def _find_coordinator(run: Run) -> None:
    group, txn = run.name("g"), run.name("t")
    ready(run, 0, group)
    ready(run, 1, txn)
    find(run, 0, group)
    find(run, 1, txn)
    find(run, 2, "not-a-share-key")
    find(run, 7, group)


@scenario("join-group.member-id-required", "a first JoinGroup (v9): MEMBER_ID_REQUIRED, then in")
def _join_member_id_required(run: Run) -> None:
    group = run.name("g")
    ready(run, 0, group)
    first = join(run, group)
    joined = join(run, group, first.member_id)
    run.record("member id given back", first.member_id == joined.member_id)


@scenario("join-group.errors", "unknown member, inconsistent protocols, bad session timeout")
def _join_errors(run: Run) -> None:
    group = run.name("g")
    ready(run, 0, group)
    join(run, group, "no-such-member")
    join(run, group, "", session_timeout=1)
    first = join(run, group)
    join(run, group, first.member_id)
    join(run, group, "", protocol_type="other")


@scenario("group-protocol.unknown-member", "Heartbeat, SyncGroup, LeaveGroup of strangers")
def _unknown_member(run: Run) -> None:
    group = run.name("g")
    ready(run, 0, group)
    run.call(
        HEARTBEAT,
        4,
        {"group_id": group, "generation_id": 1, "member_id": "x", "group_instance_id": None},
    )
    run.call(
        SYNC_GROUP,
        5,
        {
            "group_id": group,
            "generation_id": 1,
            "member_id": "x",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
    )
    run.call(
        LEAVE_GROUP,
        5,
        {
            "group_id": group,
            "members": [{"member_id": "x", "group_instance_id": None, "reason": None}],
        },
    )


def commit(run: Run, group: str, topic: str, offset: int, **fields: Any) -> Any:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": fields.pop("metadata", None),
                    }
                ],
            }
        ],
        **fields,
    }
    return run.call(OFFSET_COMMIT, 8, body)


def fetch_offsets(run: Run, group: str, topic: str | None, stable: bool = False) -> Any:
    topics = None if topic is None else [{"name": topic, "partition_indexes": [0, 1]}]
    body = {"groups": [{"group_id": group, "topics": topics}], "require_stable": stable}
    return run.call(OFFSET_FETCH, 8, body)


@scenario("offsets.simple-group", "commits of a group without members, fetched back")
def _offsets(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    commit(run, group, topic, 5, metadata="m")
    fetch_offsets(run, group, topic)
    fetch_offsets(run, group, None)
    fetch_offsets(run, group, topic, stable=True)
    commit(run, group, run.name("none"), 1)
    commit(run, group, topic, 1, metadata="x" * 5000)
    commit(run, group, topic, 2, generation_id_or_member_epoch=3, member_id="stranger")
    fetch_offsets(run, run.name("other"), topic)


@scenario("group-admin.describe-list-delete", "DescribeGroups, DeleteGroups, OffsetDelete")
def _group_admin(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    commit(run, group, topic, 3)
    run.call(DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
    body = {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]}
    run.call(OFFSET_DELETE, 0, body)
    run.call(OFFSET_DELETE, 0, {**body, "group_id": run.name("none")})
    # one group a request: Kafka answers several in the order of its coordinator shards
    run.call(DELETE_GROUPS, 2, {"groups_names": [group]})
    run.call(DELETE_GROUPS, 2, {"groups_names": [run.name("none")]})


def init(run: Run, transactional_id: str | None, pid: int = -1, epoch: int = -1) -> Any:
    body = {
        "transactional_id": transactional_id,
        "transaction_timeout": 60000,
        "producer_id": pid,
        "producer_epoch": epoch,
    }
    return run.call(INIT_PRODUCER_ID, 4, body)


def first_init(run: Run, transactional_id: str | None) -> Any:
    """InitProducerId asked again while the coordinator loads, as clients do; the
    answer it ends with is kept."""
    body = {
        "transactional_id": transactional_id,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    answer = run.until(
        lambda: run.quiet(INIT_PRODUCER_ID, 4, body),
        lambda answer: answer.error_code not in NOT_READY,
        timeout=30,
    )
    run.record("first InitProducerId", answer.error_code)
    return answer


@scenario("init-producer-id.cases", "idempotent, transactional, epoch bump, wrong producer")
def _init_producer_id(run: Run) -> None:
    txn = run.name("t")
    idempotent = init(run, None)
    run.record("idempotent epoch", idempotent.producer_epoch)
    ready(run, 1, txn)
    first = first_init(run, txn)
    second = init(run, txn)
    run.record("same producer id", first.producer_id == second.producer_id)
    run.record("epoch bumped", second.producer_epoch - first.producer_epoch)
    bumped = init(run, txn, int(second.producer_id), int(second.producer_epoch))
    run.record("bumped by the producer", bumped.producer_epoch - second.producer_epoch)
    init(run, txn, int(second.producer_id), int(second.producer_epoch) - 1)
    init(run, txn, 123456789, 0)


@scenario("end-txn.errors", "EndTxn without a transaction, of an old epoch, of a stranger")
def _end_txn(run: Run) -> None:
    txn = run.name("t")
    ready(run, 1, txn)
    started = first_init(run, txn)
    pid, epoch = int(started.producer_id), int(started.producer_epoch)

    def end(committed: bool, pid_: int = pid, epoch_: int = epoch, id_: str = txn) -> None:
        body = {
            "transactional_id": id_,
            "producer_id": pid_,
            "producer_epoch": epoch_,
            "committed": committed,
        }
        run.call(END_TXN, 3, body)

    end(True)
    end(False)
    end(True, epoch_=epoch + 5)
    end(True, pid_=pid + 1000)
    end(True, id_=run.name("never"))


@scenario("add-offsets-to-txn.errors", "AddOffsetsToTxn of an old epoch and of a stranger")
def _add_offsets(run: Run) -> None:
    txn, group = run.name("t"), run.name("g")
    ready(run, 1, txn)
    started = first_init(run, txn)
    pid, epoch = int(started.producer_id), int(started.producer_epoch)
    for producer_id, producer_epoch in ((pid, epoch - 1), (pid + 1000, epoch)):
        body = {
            "transactional_id": txn,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "group_id": group,
        }
        run.call(ADD_OFFSETS_TO_TXN, 3, body)


@scenario("transactions-admin.list", "ListTransactions lists a new transactional id")
def _transactions_admin(run: Run) -> None:
    txn = run.name("t")
    ready(run, 1, txn)
    first_init(run, txn)
    answer = run.quiet(
        LIST_TRANSACTIONS,
        1,
        {"state_filters": [], "producer_id_filters": [], "duration_filter": -1},
    )
    mine = [t for t in answer.transaction_states if t.transactional_id == txn]
    run.record("listed", [(t.transaction_state, answer.error_code) for t in mine])
