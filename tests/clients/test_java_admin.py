"""The Java client 4.4's Admin API on what is not groups or topics' data: group offsets,
topic and group configs, ACLs and SCRAM credentials. Each scenario is one admin script
(KafkaTool ``script``: one Admin client, one JVM) run against Odradek and Apache Kafka
4.4 at once; the answers must be the same on both.

Neither shared broker has an authorizer, and then both refuse every ACL request with
SecurityDisabledException; the ACLs themselves are checked on a Kafka 4.4 and an
Odradek of their own with the standard authorizer on (ANONYMOUS a super user)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import java, reference_kafka
from helpers.acl_admin import AUTHORIZER
from helpers.both_brokers import on_both
from helpers.broker import Broker, BrokerFactory
from helpers.reference_kafka import ReferenceKafka

pytestmark = pytest.mark.timeout(300)

Steps = Sequence[Sequence[str] | dict[str, Any]]
UNIQUE = {"topic_id", "coordinator"}  # a broker's own
AUTHORIZED = {"authorizer.class.name": AUTHORIZER, "super.users": "User:ANONYMOUS"}


@pytest.fixture(scope="module", autouse=True)
def _java_tool() -> None:
    java.command(["--help"])  # compile once, before the scenarios' threads


@pytest.fixture
def kafka_with_acls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceKafka]:
    reference_kafka.require()
    kafka = ReferenceKafka(Path(tmp_path_factory.mktemp("kafka44-acls")), extra=AUTHORIZED)
    kafka.start()
    yield kafka
    kafka.stop()


def run_on_both(
    steps: Steps,
    odradek: Broker,
    kafka: ReferenceKafka,
    keep: Callable[[int, dict[str, Any]], bool] = lambda step, line: True,
) -> list[list[dict]]:
    """The steps' lines (those `keep` keeps), the same on both brokers but for what
    differs between any two (topic ids, the coordinator), else the test fails."""

    def scenario(bootstrap: str) -> list[list[dict]]:
        out = java.admin_steps(bootstrap, steps)
        return [
            [{k: v for k, v in x.items() if k not in UNIQUE} for x in lines if keep(i, x)]
            for i, lines in enumerate(out)
        ]

    outcomes = on_both(scenario, odradek, kafka)
    assert outcomes["odradek"] == outcomes["kafka44"]
    return outcomes["kafka44"]


def failure(lines: list[dict[str, Any]]) -> tuple[str, str]:
    (line,) = lines
    found = line.get("error") or line["failure"]
    return found["type"].rsplit(".", 1)[-1], found["message"]


def test_group_offsets_alter_list_delete(
    shared_broker: Broker,
    kafka44: ReferenceKafka,
    unique_topic: str,
    unique_group: str,
) -> None:
    t, g = unique_topic, unique_group

    def offsets(*pairs: tuple[int, int]) -> list[dict[str, Any]]:
        return [{"topic": t, "partition": p, "offset": o, "metadata": ""} for p, o in pairs]

    steps: Steps = [
        ["create-topic", "--topic", t, "--partitions", "2"],
        ["alter-group-offsets", "--group", g, "--offset", f"{t}:0=3", "--offset", f"{t}:1=5"],
        ["group-offsets", "--group", g],
        ["list-groups", "--type", "classic"],
        ["delete-group-offsets", "--group", g, "--partition", f"{t}:0"],
        ["group-offsets", "--group", g],
        ["delete-groups", "--group", g],
        ["group-offsets", "--group", g],
        ["delete-groups", "--group", g],
        ["describe-groups", "--group", g],
    ]
    out = run_on_both(steps, shared_broker, kafka44, lambda i, x: i != 3 or x["group"] == g)
    assert out[2] == offsets((0, 3), (1, 5))
    # offsets alone make an empty classic group, a simple one (no protocol)
    listed = {"group": g, "type": "Classic", "protocol": "", "state": "Empty", "simple": True}
    assert out[3] == [listed]
    assert out[4] == [{"partition": f"{t}:0", "deleted": True}]
    assert out[5] == offsets((1, 5))
    assert out[6] == [{"group": g, "deleted": True}]
    assert out[7] == []
    assert failure(out[8]) == ("GroupIdNotFoundException", "The group id does not exist.")
    assert failure(out[9]) == ("GroupIdNotFoundException", f"Group {g} not found.")


def test_configs_describe_and_incremental_alter(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    t = unique_topic
    names = {"retention.ms", "cleanup.policy", "max.message.bytes"}

    def describe() -> list[str]:
        return ["describe-configs", "--topic", t]

    steps: Steps = [
        ["create-topic", "--topic", t, "--config", "retention.ms=3600000"],
        describe(),
        ["alter-configs", "--topic", t, "--set", "retention.ms=1000000",
         "--set", "max.message.bytes=2000000", "--append", "cleanup.policy=compact"],
        describe(),
        ["alter-configs", "--topic", t, "--delete", "retention.ms",
         "--subtract", "cleanup.policy=delete"],
        describe(),
        ["alter-configs", "--topic", t, "--set", "no.such.config=1"],
        ["alter-configs", "--topic", t, "--set", "retention.ms=abc"],
        ["alter-configs", "--group", unique_group, "--set", "consumer.session.timeout.ms=50000"],
        ["describe-configs", "--group", unique_group],
    ]  # fmt: skip

    def keep(step: int, line: dict[str, Any]) -> bool:
        # what the topic says of the configs this test sets (Kafka also lists
        # min.insync.replicas, set for its whole cluster when its storage is formatted)
        if step in (1, 3, 5):
            return line["name"] in names
        return step != 9 or not line["default"]

    out = run_on_both(steps, shared_broker, kafka44, keep)

    def values(lines: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
        return {c["name"]: (c["value"], c["source"]) for c in lines}

    dynamic, default = "DYNAMIC_TOPIC_CONFIG", "DEFAULT_CONFIG"
    assert values(out[1]) == {
        "retention.ms": ("3600000", dynamic),
        "cleanup.policy": ("delete", default),
        "max.message.bytes": ("1048588", default),
    }
    assert values(out[3]) == {
        "retention.ms": ("1000000", dynamic),
        "cleanup.policy": ("delete,compact", dynamic),
        "max.message.bytes": ("2000000", dynamic),
    }
    assert values(out[5]) == {
        "retention.ms": ("604800000", default),
        "cleanup.policy": ("compact", dynamic),
        "max.message.bytes": ("2000000", dynamic),
    }
    assert failure(out[6]) == (
        "InvalidConfigurationException",
        "Unknown topic config name: no.such.config",
    )
    assert failure(out[7]) == (
        "InvalidConfigurationException",
        "Invalid value abc for configuration retention.ms: Not a number of type LONG",
    )
    assert values(out[9]) == {"consumer.session.timeout.ms": ("50000", "DYNAMIC_GROUP_CONFIG")}


def test_acls_without_an_authorizer_are_refused(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    steps: Steps = [
        ["create-acls", "--acl", f"resource=TOPIC,name={unique_topic},operation=READ"],
        ["describe-acls"],
        ["delete-acls", "--filter", "resource=TOPIC"],
    ]
    out = run_on_both(steps, shared_broker, kafka44)
    assert out[0][0]["created"] is False
    assert failure(out[0]) == ("SecurityDisabledException", "No Authorizer is configured.")
    assert failure(out[1]) == (
        "SecurityDisabledException",
        "No Authorizer is configured on the broker",
    )
    assert failure(out[2]) == ("SecurityDisabledException", "No Authorizer is configured.")


def acl(resource: str, name: str, principal: str, operation: str, **more: str) -> dict[str, str]:
    return {
        "resource_type": resource,
        "name": name,
        "pattern_type": more.get("pattern", "LITERAL"),
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission": more.get("permission", "ALLOW"),
    }


def test_acls_create_describe_delete(
    broker_factory: BrokerFactory, kafka_with_acls: ReferenceKafka
) -> None:
    odradek = broker_factory(AUTHORIZED)
    alice = acl("TOPIC", "orders", "User:alice", "READ")
    bob = acl("TOPIC", "logs-", "User:bob", "WRITE", pattern="PREFIXED")
    eve = acl("GROUP", "*", "User:eve", "ALL", permission="DENY")
    # Kafka applies ACLs through its metadata log a moment after it answers: steps that
    # read them are run again until they see what they should (within 15 s)
    steps: Steps = [
        ["create-acls",
         "--acl", "resource=TOPIC,name=orders,principal=User:alice,operation=READ",
         "--acl", "resource=TOPIC,name=logs-,pattern=PREFIXED,principal=User:bob,operation=WRITE",
         "--acl", "resource=GROUP,name=*,principal=User:eve,operation=ALL,permission=DENY"],
        {"args": ["describe-acls"], "lines": 3, "within_ms": 15000},
        ["describe-acls", "--filter", "resource=TOPIC"],
        ["describe-acls", "--filter", "principal=User:bob"],
        ["describe-acls", "--filter", "resource=TOPIC,name=logs-app,pattern=MATCH"],
        ["delete-acls", "--filter", "principal=User:alice", "--filter", "resource=GROUP"],
        {"args": ["describe-acls"], "lines": 1, "within_ms": 15000},
        ["delete-acls", "--filter", "principal=User:nobody"],
    ]  # fmt: skip
    out = run_on_both(steps, odradek, kafka_with_acls)
    assert [{k: v for k, v in x.items() if k != "created"} for x in out[0]] == [alice, bob, eve]
    assert all(x["created"] for x in out[0])
    assert out[1] == sorted([alice, bob, eve], key=str)
    assert out[2] == sorted([alice, bob], key=str)
    assert out[3] == [bob]
    assert out[4] == [bob]  # the prefixed ACL matches the topic logs-app
    assert out[5] == [{**alice, "deleted": True}, {**eve, "deleted": True}]
    assert out[6] == [bob]
    assert out[7] == []


def test_scram_credentials(
    shared_broker: Broker, kafka44: ReferenceKafka, name_factory: Callable[[str], str]
) -> None:
    alice, bob, nobody = name_factory("alice"), name_factory("bob"), name_factory("nobody")
    steps: Steps = [
        ["alter-scram", "--upsert", f"{alice}:SCRAM-SHA-256:8192:secret",
         "--upsert", f"{bob}:SCRAM-SHA-512:4096:other"],
        ["alter-scram", "--upsert", f"{alice}:SCRAM-SHA-512:4096:more"],
        {"args": ["describe-scram", "--user", alice, "--user", bob], "lines": 2,
         "within_ms": 15000},
        ["describe-scram", "--user", nobody],
        ["alter-scram", "--upsert", f"{nobody}:SCRAM-SHA-256:1000:x"],
        ["alter-scram", "--delete", f"{bob}:SCRAM-SHA-512", "--delete", f"{nobody}:SCRAM-SHA-256"],
        {"args": ["describe-scram", "--user", bob], "lines": 1, "within_ms": 15000},
        ["describe-scram", "--user", alice],
    ]  # fmt: skip
    out = run_on_both(steps, shared_broker, kafka44)
    assert out[0] == [{"user": alice, "altered": True}, {"user": bob, "altered": True}]
    assert out[1] == [{"user": alice, "altered": True}]
    assert out[2][1] == {
        "user": bob,
        "credentials": [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}],
    }
    mechanisms = [(c["mechanism"], c["iterations"]) for c in out[2][0]["credentials"]]
    assert mechanisms == [("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096)]
    missing = f"Attempt to describe a user credential that does not exist: {nobody}"
    assert failure(out[3]) == ("ResourceNotFoundException", missing)
    assert failure(out[4]) == ("UnacceptableCredentialException", "Too few iterations")
    assert out[5][0] == {"user": bob, "altered": True}
    assert failure(out[5][1:]) == (
        "ResourceNotFoundException",
        "Attempt to delete a user credential that does not exist",
    )
    assert failure(out[6])[0] == "ResourceNotFoundException"
    assert len(out[7][0]["credentials"]) == 2
