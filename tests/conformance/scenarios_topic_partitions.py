"""Scenarios of DescribeTopicPartitions (75): named topics and the paging of their
partitions with response_partition_limit and the cursor, unknown topics, invalid
cursors, and what a principal may see with ACLs."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_acls import DESCRIBE, TOPIC, binding, create_acls, login
from conformance.scenarios_topics import quietly_create

DESCRIBE_TOPIC_PARTITIONS = 75


def describe(
    run: Run,
    names: list[str],
    limit: int = 2000,
    cursor: tuple[str, int] | None = None,
    client: Any = None,
) -> Any:
    body = {
        "topics": [{"name": name} for name in names],
        "response_partition_limit": limit,
        "cursor": None
        if cursor is None
        else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }
    return run.call(DESCRIBE_TOPIC_PARTITIONS, 0, body, client)


@scenario("describe-topic-partitions.valid", "two topics described whole, then page by page")
def _valid(run: Run) -> None:
    a, b = run.name("a"), run.name("b")
    quietly_create(run, a, 3)
    quietly_create(run, b, 2)
    describe(run, [b, a, a])
    describe(run, [a, b], limit=2)
    describe(run, [a, b], limit=2, cursor=(a, 2))
    describe(run, [a, b], limit=3)
    describe(run, [a, b], limit=0, cursor=(b, 1))
    describe(run, [a, b], cursor=(b, 5))
    # every topic, from the cursor on: this run's topics sort together
    describe(run, [], limit=2, cursor=(a, 1))


@scenario("describe-topic-partitions.unknown", "unknown topics and names no topic may have")
def _unknown(run: Run) -> None:
    a = run.name("a")
    quietly_create(run, a, 1)
    describe(run, [run.name("none"), a, "bad name!", "."])
    describe(run, [run.name("none")], cursor=(run.name("none"), 0))


@scenario("describe-topic-partitions.invalid-cursor", "cursors outside the topics asked")
def _invalid_cursor(run: Run) -> None:
    a = run.name("a")
    quietly_create(run, a, 2)
    describe(run, [a], cursor=(run.name("other"), 0))
    describe(run, [a], cursor=(a, -1))
    describe(run, [run.name("b"), a], cursor=(run.name("b"), 0))
    describe(run, [], cursor=(a, -1))


@scenario(
    "describe-topic-partitions.acls", "topics a principal may and may not describe", secure=True
)
def _acls(run: Run) -> None:
    seen, hidden = run.name("seen"), run.name("zhidden")
    quietly_create(run, seen, 2)
    quietly_create(run, hidden, 1)
    principal = "User:alice"
    create_acls(run, binding(TOPIC, seen, operation=DESCRIBE, principal=principal))
    alice = login(run)
    answer = run.until(
        lambda: run.quiet(
            DESCRIBE_TOPIC_PARTITIONS,
            0,
            {"topics": [{"name": seen}], "response_partition_limit": 10, "cursor": None},
            alice,
        ),
        lambda answer: answer.topics[0].error_code == 0,
    )
    run.record("operations", answer.topics[0].topic_authorized_operations)
    # (Kafka answers several refused topics in the order of a Java HashSet of them)
    describe(run, [hidden, seen], client=alice)
    describe(run, [run.name("none"), seen], client=alice)
    # every topic alice may describe from the cursor on (others' too: only this run's
    # are kept)
    body = {
        "topics": [],
        "response_partition_limit": 10,
        "cursor": {"topic_name": seen, "partition_index": 0},
    }
    listed = run.quiet(DESCRIBE_TOPIC_PARTITIONS, 0, body, alice)
    run.record(
        "listed", [(t.error_code, t.name) for t in listed.topics if t.name.startswith(run.prefix)]
    )
