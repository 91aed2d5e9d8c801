"""Scenarios of AlterReplicaLogDirs on a broker of one log directory: the replica's
own directory, paths that are no log directory, partitions the broker does not have,
a topic name too long for a future log's directory name, and a principal without
ACLs. (Moves between two directories, and a failed directory, are
tests/clients/test_log_dirs.py's.)"""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_acls import login
from conformance.scenarios_topics import quietly_create

ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS = 34, 35

# (path, [(topic, [partition, ...]), ...]), in the request's order
Moves = list[tuple[str, list[tuple[str, list[int]]]]]


def own_log_dir(run: Run) -> str:
    """The broker's one log directory, as DescribeLogDirs names it (not recorded: the
    path is the machine's)."""
    answer = run.quiet(DESCRIBE_LOG_DIRS, 4, {"topics": []})
    (result,) = answer.results
    return str(result.log_dir)


def sorted_view(answer: Any) -> dict[str, Any]:
    """Kafka answers topics and partitions in a hash map's order: compared sorted."""
    topics = sorted(answer.results, key=lambda t: t.topic_name)
    return {
        "results": [
            {
                "topic_name": t.topic_name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": p.error_code}
                    for p in sorted(t.partitions, key=lambda p: p.partition_index)
                ],
            }
            for t in topics
        ],
    }


def alter(run: Run, moves: Moves, version: int = 2, **kw: Any) -> Any:
    body = {
        "dirs": [
            {"path": path, "topics": [{"name": n, "partitions": p} for n, p in topics]}
            for path, topics in moves
        ]
    }
    return run.call(ALTER_REPLICA_LOG_DIRS, version, body, view=sorted_view, **kw)


@scenario(
    "alter-replica-log-dirs.errors",
    "its own directory, no log directory, partitions not here, a name too long",
)
def _alter_replica_log_dirs(run: Run) -> None:
    name = run.name("m")
    quietly_create(run, name, 2)
    own = own_log_dir(run)
    alter(run, [(own, [(name, [0, 1])])])
    alter(run, [(own, [(name, [0])])], version=1)
    alter(run, [(own, [(name, [7]), (run.name("none"), [0])])])
    alter(run, [("relative/dir", [(name, [0])]), ("/no/such/log/dir", [(name, [1])])])
    alter(run, [(own + "/", [(name, [0])])])
    alter(run, [(own, [(run.name("x" * 200), [0])])])
    alter(run, [("/no/such/log/dir", [(name, [0])]), (own, [(name, [0])])])


@scenario("alter-replica-log-dirs.refused", "a principal without ACLs", secure=True)
def _alter_refused(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    alice = login(run)
    alter(run, [("/no/such/log/dir", [(name, [0]), (run.name("none"), [1])])], client=alice)
