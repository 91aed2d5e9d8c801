"""The ACL authorizer's rules, sans-IO: Kafka's matching of literal, prefixed and
wildcard bindings, DENY over ALLOW, implied operations, hosts, super users and the
no-ACL default, ACL filters and the checks a binding must pass to be created."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from helpers.acl_admin import ANONYMOUS

from odradek.broker.security.acls import AclBinding, AclFilter, AclStore, creation_problem
from odradek.broker.security.authorizer import AclAuthorizer
from odradek.broker.security.resources import Operation, PatternType, Permission, ResourceType
from odradek.broker.security.session import Session


def binding(
    resource_type: ResourceType,
    name: str,
    operation: Operation,
    permission: Permission = Permission.ALLOW,
    principal: str = ANONYMOUS,
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def authorizer_with(
    data_dir: Path,
    bindings: Iterable[AclBinding],
    super_users: Iterable[str] = (),
    allow_if_no_acl: bool = False,
) -> AclAuthorizer:
    data_dir.mkdir(exist_ok=True)
    store = AclStore(data_dir)
    asyncio.run(store.create(bindings))
    return AclAuthorizer(store, frozenset(super_users), allow_if_no_acl)


TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
READ, WRITE, DESCRIBE, ALL = Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.ALL
ANON = Session("PLAINTEXT", "127.0.0.1")
ALICE = Session("PLAINTEXT", "127.0.0.1", "User:alice")


def test_acl_rules_are_kafkas(tmp_path: Path) -> None:
    auth = authorizer_with(
        tmp_path,
        [
            binding(TOPIC, "orders", READ),
            binding(TOPIC, "pay", ALL, pattern=PatternType.PREFIXED),
            binding(TOPIC, "payroll", WRITE, Permission.DENY),
            binding(TOPIC, "*", DESCRIBE, principal="User:*"),
            binding(TOPIC, "ro", READ, Permission.DENY),
            binding(TOPIC, "lan", READ, host="10.0.0.9"),
            binding(GROUP, "cfg", Operation.ALTER_CONFIGS),
        ],
    )
    assert auth.authorize(ANON, READ, TOPIC, "orders")
    assert auth.authorize(ANON, DESCRIBE, TOPIC, "orders")  # READ implies DESCRIBE
    assert not auth.authorize(ANON, WRITE, TOPIC, "orders")
    assert auth.authorize(ANON, WRITE, TOPIC, "payments")  # prefixed ALL
    assert not auth.authorize(ANON, WRITE, TOPIC, "payroll")  # DENY beats ALLOW
    assert auth.authorize(ANON, READ, TOPIC, "payroll")  # the DENY is of WRITE only
    assert not auth.authorize(ANON, WRITE, TOPIC, "pa")  # shorter than the prefix
    assert auth.authorize(ALICE, DESCRIBE, TOPIC, "anything")  # wildcard name and principal
    assert not auth.authorize(ALICE, READ, TOPIC, "orders")
    assert not auth.authorize(ANON, READ, TOPIC, "ro")
    assert auth.authorize(ANON, DESCRIBE, TOPIC, "ro")  # a DENY of READ leaves DESCRIBE
    assert not auth.authorize(ANON, READ, TOPIC, "lan")  # bound to another host
    assert auth.authorize(Session("PLAINTEXT", "10.0.0.9"), READ, TOPIC, "lan")
    assert auth.authorize(ANON, Operation.DESCRIBE_CONFIGS, GROUP, "cfg")  # implied
    assert not auth.authorize(ANON, DESCRIBE, GROUP, "cfg")
    assert not auth.authorize(ANON, READ, GROUP, "no-acls")  # nothing found: denied
    # some topic may be written (the idempotent producer's check)
    assert auth.authorize_any(ANON, WRITE, TOPIC)
    assert not auth.authorize_any(ALICE, WRITE, TOPIC)


def test_super_users_and_the_no_acl_default(tmp_path: Path) -> None:
    acls = [binding(GROUP, "alices", READ, principal="User:alice")]
    everyone = authorizer_with(tmp_path / "a", acls, allow_if_no_acl=True)
    assert everyone.authorize(ANON, READ, GROUP, "free")  # no ACL at all: allowed
    assert not everyone.authorize(ANON, READ, GROUP, "alices")  # ACLs, none for ANON
    assert everyone.authorize(ALICE, READ, GROUP, "alices")
    strict = authorizer_with(tmp_path / "b", acls, super_users=[ANONYMOUS])
    assert strict.authorize(ANON, Operation.DELETE, GROUP, "alices")
    assert strict.authorize_any(ANON, WRITE, TOPIC)
    assert not strict.authorize(ALICE, READ, GROUP, "free")
    denied_everywhere = authorizer_with(
        tmp_path / "c",
        [binding(TOPIC, "x", WRITE), binding(TOPIC, "*", WRITE, Permission.DENY)],
    )
    assert not denied_everywhere.authorize_any(ANON, WRITE, TOPIC)


def test_filters_and_creation_checks() -> None:
    prefixed = binding(TOPIC, "pay", READ, pattern=PatternType.PREFIXED)
    wildcard = binding(TOPIC, "*", READ)
    orders = binding(TOPIC, "orders", READ)
    match = AclFilter(
        ResourceType.ANY, "payments", PatternType.MATCH, None, None, Operation.ANY, Permission.ANY
    )
    assert [match.matches(b) for b in (prefixed, wildcard, orders)] == [True, True, False]
    exact = AclFilter(TOPIC, "pay", PatternType.ANY, ANONYMOUS, "*", READ, Permission.ALLOW)
    assert [exact.matches(b) for b in (prefixed, wildcard, orders)] == [True, False, False]
    unknown = AclFilter.from_wire(0, None, 3, None, None, 1, 1)
    assert unknown.problem() is not None
    assert creation_problem(orders) is None
    bad = [
        binding(ResourceType.CLUSTER, "other", Operation.ALTER),
        binding(TOPIC, "", READ),
        binding(TOPIC, "t", Operation.ANY),
        binding(TOPIC, "t", READ, Permission.ANY),
        binding(TOPIC, "t", READ, principal="alice"),
        binding(TOPIC, "t", READ, pattern=PatternType.MATCH),
    ]
    assert all(creation_problem(b) is not None for b in bad)
