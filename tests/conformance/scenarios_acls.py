"""Scenarios of ACL administration (CreateAcls, DescribeAcls, DeleteAcls) where no
authorizer is configured, and, on the secure pair, with the ACL authorizer: valid and
invalid bindings and filters, and what a principal without ACLs is refused."""

from __future__ import annotations

from typing import Any

from helpers.wire import WireClient

from conformance.harness import Run, scenario
from conformance.scenarios_security import (
    SHA_256,
    authenticate,
    handshake,
    make_scram_user,
    scram_client,
)

METADATA, CREATE_TOPICS, DESCRIBE_CONFIGS = 3, 19, 32
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
DESCRIBE_SCRAM, ALTER_SCRAM, DESCRIBE_CLUSTER = 50, 51, 60
# resource types, pattern types, operations, permissions (Kafka's codes)
UNKNOWN, ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 0, 1, 2, 3, 4, 5
MATCH, LITERAL, PREFIXED = 2, 3, 4
ALL, READ, WRITE, CREATE, DESCRIBE, ALTER = 2, 3, 4, 5, 8, 7
DENY, ALLOW = 2, 3
ALICE = "User:alice"


def binding(
    resource_type: int,
    name: str,
    pattern: int = LITERAL,
    operation: int = READ,
    permission: int = ALLOW,
    principal: str = ALICE,
    host: str = "*",
) -> dict[str, Any]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def acl_filter(
    resource_type: int = ANY,
    name: str | None = None,
    pattern: int = ANY,
    operation: int = ANY,
    permission: int = ANY,
    principal: str | None = None,
    host: str | None = None,
) -> dict[str, Any]:
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": host,
        "operation": operation,
        "permission_type": permission,
    }


def create_acls(run: Run, *bindings: dict[str, Any], client: WireClient | None = None) -> Any:
    return run.call(CREATE_ACLS, 3, {"creations": list(bindings)}, client)


def sorted_acls(answer: Any) -> dict[str, Any]:
    """A DescribeAcls answer with its resources and their ACLs in one order: neither
    broker promises one."""
    return {
        "error_code": answer.error_code,
        "error_message": answer.error_message,
        "resources": sorted(
            (
                r.resource_type,
                r.resource_name,
                r.pattern_type,
                sorted((a.principal, a.host, a.operation, a.permission_type) for a in r.acls),
            )
            for r in answer.resources
        ),
    }


def describe_acls(run: Run, client: WireClient | None = None, **fields: Any) -> Any:
    return run.call(DESCRIBE_ACLS, 3, acl_filter(**fields), client, view=sorted_acls)


def sorted_deletions(answer: Any) -> list[dict[str, Any]]:
    """Each filter's result, the ACLs it matched in one order."""
    return [
        {
            "error_code": result.error_code,
            "error_message": result.error_message,
            "matching_acls": sorted(
                (
                    {
                        "error_code": m.error_code,
                        "acl": (
                            m.resource_type,
                            m.resource_name,
                            m.pattern_type,
                            m.principal,
                            m.host,
                            m.operation,
                            m.permission_type,
                        ),
                    }
                    for m in result.matching_acls
                ),
                key=lambda m: m["acl"],
            ),
        }
        for result in answer.filter_results
    ]


def delete_acls(run: Run, *filters: dict[str, Any], client: WireClient | None = None) -> Any:
    return run.call(DELETE_ACLS, 3, {"filters": list(filters)}, client, view=sorted_deletions)


@scenario("acls.no-authorizer", "the ACL APIs where no authorizer is configured")
def _acls_no_authorizer(run: Run) -> None:
    describe_acls(run)
    describe_acls(run, resource_type=9)
    create_acls(run, binding(TOPIC, run.name("t")), binding(ANY, run.name("t")))
    delete_acls(run, acl_filter(TOPIC, run.name("t")), acl_filter(9))


def answer_or_closed(run: Run, api_key: int, body: dict[str, Any]) -> None:
    """Kafka refuses some requests as it parses them: the connection closes."""
    try:
        run.call(api_key, 3, body, run.client())
    except ConnectionError:
        run.record(f"api {api_key}", "the connection closed")


@scenario("acls.unknown-codes", "bindings and filters with the UNKNOWN code (0) in a field")
def _acls_unknown_codes(run: Run) -> None:
    name = run.name("t")
    for field in ("resource_type", "resource_pattern_type", "operation", "permission_type"):
        answer_or_closed(run, CREATE_ACLS, {"creations": [binding(TOPIC, name) | {field: 0}]})
    for field in ("resource_type_filter", "pattern_type_filter", "operation", "permission_type"):
        answer_or_closed(run, DESCRIBE_ACLS, acl_filter() | {field: 0})
        answer_or_closed(run, DELETE_ACLS, {"filters": [acl_filter(TOPIC) | {field: 0}]})


def until_described(run: Run, count: int, **fields: Any) -> None:
    """Wait until DescribeAcls shows `count` ACLs for the filter (Kafka's brokers
    learn of new ACLs from the controller a moment after CreateAcls answers)."""
    run.until(
        lambda: run.quiet(DESCRIBE_ACLS, 3, acl_filter(**fields)),
        lambda answer: sum(len(r.acls) for r in answer.resources) == count,
    )


@scenario("acls.create-describe-delete", "ACLs made, found by filters, deleted", secure=True)
def _acls_valid(run: Run) -> None:
    topic, prefix, user = run.name("orders"), run.name(""), f"User:{run.name('p')}"
    create_acls(
        run,
        binding(TOPIC, topic, principal=user),
        binding(TOPIC, topic, operation=WRITE, permission=DENY, host="10.0.0.1", principal=user),
        binding(TOPIC, prefix, PREFIXED, DESCRIBE, principal=user),
        binding(GROUP, prefix, PREFIXED, ALL, principal="User:bob"),
        binding(TRANSACTIONAL_ID, run.name("tx"), operation=WRITE, principal=user),
    )
    create_acls(run, binding(TOPIC, topic, principal=user))  # the same again: one ACL still
    until_described(run, 1, resource_type=TRANSACTIONAL_ID, name=run.name("tx"), pattern=LITERAL)
    describe_acls(run, resource_type=TOPIC, name=topic, pattern=LITERAL)
    describe_acls(run, resource_type=TOPIC, name=topic, pattern=MATCH)
    describe_acls(run, resource_type=ANY, name=prefix, pattern=PREFIXED)
    describe_acls(run, resource_type=TOPIC, name=topic, pattern=MATCH, operation=WRITE)
    describe_acls(run, resource_type=GROUP, name=prefix, principal="User:bob", pattern=ANY)
    describe_acls(run, resource_type=TOPIC, name=run.name("none"), pattern=LITERAL)
    delete_acls(
        run,
        acl_filter(TOPIC, topic, LITERAL, permission=DENY),
        acl_filter(ANY, prefix, PREFIXED),
        acl_filter(TOPIC, run.name("none"), LITERAL),
    )
    until_described(run, 1, resource_type=TOPIC, name=topic, pattern=LITERAL)
    describe_acls(run, resource_type=TOPIC, name=topic, pattern=MATCH)
    delete_acls(run, acl_filter(ANY, topic, MATCH), acl_filter(TRANSACTIONAL_ID, run.name("tx")))


@scenario("acls.bad-bindings", "ACLs Kafka will not make", secure=True)
def _acls_invalid(run: Run) -> None:
    name = run.name("t")
    create_acls(
        run,
        binding(TOPIC, name, 9),  # codes Kafka does not know
        binding(9, name),
        binding(TOPIC, name, operation=99),
        binding(TOPIC, name, permission=9),
        binding(TOPIC, name, principal="alice"),  # no principal type
        binding(TOPIC, ""),
        binding(CLUSTER, "not-the-cluster", operation=ALTER),
        binding(TOPIC, name, host=""),
    )
    create_acls(run, binding(TOPIC, name, principal=""), binding(TOPIC, name))


@scenario("acls.filter-values-in-bindings", "ACLs with ANY or MATCH in them", secure=True)
def _acls_filter_values(run: Run) -> None:
    name = run.name("t")
    create_acls(
        run,
        binding(TOPIC, name, ANY),
        binding(TOPIC, name, MATCH),
        binding(ANY, name),
        binding(TOPIC, name, operation=ANY),
        binding(TOPIC, name, permission=ANY),
    )
    create_acls(run, binding(TOPIC, name), binding(TOPIC, name, MATCH))
    describe_acls(run, resource_type=TOPIC, name=name, pattern=LITERAL)


@scenario("acls.bad-filters", "filters of codes Kafka does not know", secure=True)
def _acls_bad_filters(run: Run) -> None:
    describe_acls(run, resource_type=9)
    describe_acls(run, pattern=9)
    describe_acls(run, operation=99)
    describe_acls(run, permission=9)
    describe_acls(run, principal="alice")
    delete_acls(
        run,
        acl_filter(9),
        acl_filter(TOPIC, run.name("none"), pattern=9),
        acl_filter(TOPIC, run.name("none"), operation=99),
        acl_filter(TOPIC, run.name("none"), permission=9),
        acl_filter(TOPIC, run.name("none"), LITERAL),
    )


def login(run: Run, user: str = "alice", password: str = "alice-secret") -> WireClient:
    client = run.client(sasl=True)
    assert handshake(run, client, "PLAIN", quiet=True).error_code == 0
    token = f"\0{user}\0{password}".encode()
    assert authenticate(run, client, token, quiet=True).error_code == 0
    return client


def own_topics(run: Run, answer: Any) -> list[str]:
    return sorted(t.name for t in answer.topics if t.name.startswith(run.prefix))


@scenario("acls.refused-admin", "admin requests of a principal without ACLs", secure=True)
def _acls_refused(run: Run) -> None:
    alice = login(run)
    name = run.name("t")
    describe_acls(run, alice)
    create_acls(run, binding(TOPIC, name), client=alice)
    delete_acls(run, acl_filter(TOPIC, name), client=alice)
    # (not users=null: Kafka 4.4 never answers that one when it refuses it, a
    # NullPointerException in its handler)
    run.call(DESCRIBE_SCRAM, 0, {"users": [{"name": "alice"}]}, alice)
    upsert = {
        "name": run.name("u"),
        "mechanism": 1,
        "iterations": 4096,
        "salt": b"salt",
        "salted_password": b"x" * 32,
    }
    run.call(ALTER_SCRAM, 0, {"deletions": [], "upsertions": [upsert]}, alice)
    create = {
        "topics": [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 5000,
        "validate_only": False,
    }
    run.call(CREATE_TOPICS, 7, create, alice)
    run.call(METADATA, 13, {"topics": [{"name": name}], "allow_auto_topic_creation": True}, alice)
    every = {"topics": None, "allow_auto_topic_creation": False}
    run.call(METADATA, 13, every, alice, view=lambda a: (a.error_code, own_topics(run, a)))
    resources = [
        {"resource_type": 2, "resource_name": name, "configuration_keys": None},
        {"resource_type": 4, "resource_name": "", "configuration_keys": ["log.retention.ms"]},
    ]
    for resource in resources:
        body = {"resources": [resource], "include_synonyms": False, "include_documentation": False}
        run.call(DESCRIBE_CONFIGS, 4, body, alice)
    cluster = {"include_cluster_authorized_operations": True, "endpoint_type": 1}
    run.call(DESCRIBE_CLUSTER, 1, cluster, alice, view=lambda a: (a.error_code, a.error_message))


@scenario("acls.granted", "what a principal may do once granted", secure=True)
def _acls_granted(run: Run) -> None:
    topic, user = run.name("t"), run.name("u")
    body = {
        "topics": [
            {
                "name": topic,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 5000,
        "validate_only": False,
    }
    assert run.quiet(CREATE_TOPICS, 7, body).topics[0].error_code == 0
    principal = f"User:{user}"
    create_acls(
        run,
        binding(TOPIC, run.name(""), PREFIXED, DESCRIBE, principal=principal),
        binding(TOPIC, topic, operation=READ, principal=principal),
        binding(TOPIC, topic, operation=WRITE, permission=DENY, principal=principal),
        binding(CLUSTER, "kafka-cluster", operation=DESCRIBE, principal=principal),
    )
    make_scram_user(run, user, "pw", SHA_256)
    client = scram_client(run, user, "pw", SHA_256)
    assert client is not None
    asked = {
        "topics": [{"name": topic}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": True,
    }
    answer = run.until(
        lambda: run.quiet(METADATA, 12, asked, client),
        lambda answer: answer.topics[0].error_code == 0 and answer.topics[0].partitions,
    )
    run.record("topic operations", answer.topics[0].topic_authorized_operations)
    run.call(METADATA, 12, asked, client)
    cluster = {"include_cluster_authorized_operations": True, "endpoint_type": 1}
    described = run.call(
        DESCRIBE_CLUSTER, 1, cluster, client, view=lambda a: (a.error_code, a.error_message)
    )
    run.record("cluster operations", described.cluster_authorized_operations)
    describe_acls(run, client, principal=principal, resource_type=TOPIC)
