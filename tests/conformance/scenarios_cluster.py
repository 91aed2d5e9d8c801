"""Scenarios of cluster administration: DescribeCluster (endpoint types),
DescribeLogDirs, ElectLeaders, AlterPartitionReassignments and
ListPartitionReassignments, valid and invalid, and what a principal without ACLs is
refused of them."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_acls import login
from conformance.scenarios_data import batch, produce
from conformance.scenarios_topics import quietly_create

DESCRIBE_LOG_DIRS, ELECT_LEADERS, LIST_REASSIGNMENTS, DESCRIBE_CLUSTER = 35, 43, 46, 60
ALTER_REASSIGNMENTS = 45
PREFERRED, UNCLEAN = 0, 1


def describe_cluster(
    run: Run, endpoint_type: int = 1, operations: bool = False, version: int = 1, **kw: Any
) -> Any:
    body = {
        "include_cluster_authorized_operations": operations,
        "endpoint_type": endpoint_type,
        **kw,
    }
    return run.call(DESCRIBE_CLUSTER, version, body)


@scenario("describe-cluster.endpoint-types", "brokers (v0-v2), fenced ones, controllers, unknown")
def _describe_cluster(run: Run) -> None:
    answer = run.call(DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
    run.record("brokers", len(answer.brokers))
    answer = describe_cluster(run, operations=True)
    run.record("operations", answer.cluster_authorized_operations)
    for fenced_too in (False, True):
        answer = describe_cluster(run, version=2, include_fenced_brokers=fenced_too)
        run.record("fenced", [b.is_fenced for b in answer.brokers])
    describe_cluster(run, 2)
    describe_cluster(run, 2, version=2, include_fenced_brokers=True)
    describe_cluster(run, 0)
    describe_cluster(run, 9)


def log_dirs_view(run: Run) -> Any:
    """Each directory's error and the sizes of this run's partitions in it (the path and
    the disk's figures are the machine's)."""

    def view(answer: Any) -> dict[str, Any]:
        return {
            "error_code": answer.error_code,
            "results": [
                {
                    "error_code": result.error_code,
                    "is_cordoned": getattr(result, "is_cordoned", None),
                    "topics": sorted(
                        (
                            t.name,
                            sorted((p.partition_index, p.partition_size) for p in t.partitions),
                        )
                        for t in result.topics
                        if t.name.startswith(run.prefix)
                    ),
                }
                for result in answer.results
            ],
        }

    return view


def describe_log_dirs(
    run: Run, topics: list[tuple[str, list[int]]] | None, version: int = 5, **kw: Any
) -> Any:
    body = {
        "topics": None
        if topics is None
        else [{"topic": name, "partitions": partitions} for name, partitions in topics]
    }
    return run.call(DESCRIBE_LOG_DIRS, version, body, view=log_dirs_view(run), **kw)


@scenario("describe-log-dirs.sizes", "every partition, some, unknown ones")
def _describe_log_dirs(run: Run) -> None:
    name = run.name("l")
    quietly_create(run, name, 2)
    produce(run, name, batch(3, size=100), partition=0)
    describe_log_dirs(run, None)
    describe_log_dirs(run, None, version=4)
    describe_log_dirs(run, [(name, [0, 1])])
    describe_log_dirs(run, [(name, [1, 5]), (run.name("none"), [0])])
    describe_log_dirs(run, [])


def elect(
    run: Run, election: int, partitions: list[tuple[str, list[int]]] | None, **kw: Any
) -> Any:
    body = {
        "election_type": election,
        "topic_partitions": None
        if partitions is None
        else [{"topic": name, "partitions": p} for name, p in partitions],
        "timeout": 5000,
    }
    return run.call(ELECT_LEADERS, 2, body, view=sorted_elections, **kw)


def sorted_elections(answer: Any) -> dict[str, Any]:
    """Kafka answers the partitions in the order of a Java HashMap of them."""
    return {
        "error_code": answer.error_code,
        "results": sorted(
            (
                {
                    "topic": r.topic,
                    "partitions": sorted(
                        (
                            {
                                "partition_id": p.partition_id,
                                "error_code": p.error_code,
                                "error_message": p.error_message,
                            }
                            for p in r.partition_result
                        ),
                        key=lambda p: p["partition_id"],
                    ),
                }
                for r in answer.replica_election_results
            ),
            key=lambda r: r["topic"],
        ),
    }


@scenario("elect-leaders.cases", "preferred and unclean elections where leaders lead already")
def _elect_leaders(run: Run) -> None:
    name = run.name("e")
    quietly_create(run, name, 2)
    elect(run, PREFERRED, [(name, [0, 1])])
    elect(run, UNCLEAN, [(name, [0])])
    elect(run, PREFERRED, [(name, [7]), (run.name("none"), [0])])
    elect(run, 5, [(name, [0])])


@scenario("elect-leaders.all", "a preferred election of every partition")
def _elect_all(run: Run) -> None:
    quietly_create(run, run.name("a"), 2)

    def own(answer: Any) -> dict[str, Any]:
        """(every topic of the broker is answered: this run's own are kept)"""
        elections = sorted_elections(answer)
        elections["results"] = [
            r for r in elections["results"] if r["topic"].startswith(run.prefix)
        ]
        return elections

    body = {"election_type": PREFERRED, "topic_partitions": None, "timeout": 5000}
    run.call(ELECT_LEADERS, 2, body, view=own)


def reassignments(run: Run, topics: list[tuple[str, list[int]]] | None, **kw: Any) -> Any:
    body = {
        "timeout": 5000,
        "topics": None
        if topics is None
        else [{"name": name, "partition_indexes": p} for name, p in topics],
    }
    return run.call(LIST_REASSIGNMENTS, 0, body, **kw)


@scenario("list-partition-reassignments.cases", "all, a topic's, unknown ones")
def _list_reassignments(run: Run) -> None:
    name = run.name("r")
    quietly_create(run, name)
    reassignments(run, None)
    reassignments(run, [(name, [0])])
    reassignments(run, [(name, [3]), (run.name("none"), [0])])


def reassign(
    run: Run,
    moves: list[tuple[str, int, list[int] | None]],
    version: int = 1,
    allow_factor_change: bool = True,
    **kw: Any,
) -> Any:
    topics: dict[str, list[dict[str, Any]]] = {}
    for name, index, replicas in moves:
        topics.setdefault(name, []).append({"partition_index": index, "replicas": replicas})
    body: dict[str, Any] = {
        "timeout": 5000,
        "topics": [{"name": name, "partitions": p} for name, p in topics.items()],
    }
    if version >= 1:
        body["allow_replication_factor_change"] = allow_factor_change
    return run.call(ALTER_REASSIGNMENTS, version, body, **kw)


@scenario("alter-partition-reassignments.cases", "moves on one node: done, refused, cancels")
def _alter_reassignments(run: Run) -> None:
    name = run.name("m")
    quietly_create(run, name)
    reassign(run, [(name, 0, [0])])  # where it is: nothing to do
    reassign(run, [(name, 0, [0])], version=0)
    reassign(run, [(name, 0, None)])  # no move in progress to cancel
    reassign(run, [(name, 0, [7])])  # no such broker
    reassign(run, [(name, 0, [0, 0])])
    reassign(run, [(name, 0, [])])
    reassign(run, [(name, 0, [0, 7])], allow_factor_change=False)
    reassign(run, [(name, 3, [0]), (run.name("none"), 0, [0]), (run.name("none"), 1, None)])
    reassignments(run, None)


@scenario("cluster-admin.refused", "cluster admin of a principal without ACLs", secure=True)
def _cluster_refused(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    alice = login(run)
    describe_log_dirs(run, None, client=alice)
    elect(run, PREFERRED, [(name, [0])], client=alice)
    reassignments(run, None, client=alice)
    reassign(run, [(name, 0, [0]), (name, 1, None)], client=alice)
    body = {"include_cluster_authorized_operations": True, "endpoint_type": 1}
    answer = run.call(DESCRIBE_CLUSTER, 1, body, alice)
    run.record("operations", answer.cluster_authorized_operations)
