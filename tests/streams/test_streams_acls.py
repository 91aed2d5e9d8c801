"""Streams groups under ACLs, checked as Kafka checks them, on Odradek and Apache Kafka
4.4 started alike: the standard authorizer, `allow.everyone.if.no.acl.found`, and DENY
ACLs for the anonymous principal on chosen resources. A heartbeat needs READ on the
group and DESCRIBE on every topic of its topology; StreamsGroupDescribe needs DESCRIBE
on the group; internal topics are created only with CREATE on the cluster or on them,
else the member is told which it may not create. Both brokers must answer alike."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import reference_kafka
from helpers.acl_admin import AUTHORIZER, Acl, grant
from helpers.broker import BrokerFactory
from helpers.reference_kafka import ReferenceKafka
from helpers.wire import WireClient

from streams.test_streams_bad_input import DESCRIBE, HEARTBEAT, body, joining, topology

pytestmark = pytest.mark.timeout(300)
SETTINGS = {"authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}
SOURCE, HIDDEN = "acl-orders", "acl-hidden"
READ_DENIED, TOPIC_DENIED, DESCRIBE_DENIED, CREATE_DENIED = (
    "acl-no-read", "acl-no-topic", "acl-no-describe", "acl-no-create",
)  # fmt: skip


@pytest.fixture
def kafka_with_acls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceKafka]:
    reference_kafka.require()
    kafka = ReferenceKafka(Path(tmp_path_factory.mktemp("kafka44-acls")), extra=SETTINGS)
    kafka.start()
    yield kafka
    kafka.stop()


def stateful(source: str, changelog: str) -> dict[str, Any]:
    info = {"name": changelog, "partitions": 0, "replication_factor": 0, "topic_configs": []}
    return topology(source, state_changelog_topics=[info])


def scenario(bootstrap: str) -> list[Any]:
    """The same requests on either broker: what each answered."""
    answers: list[Any] = []
    with WireClient(bootstrap) as client:
        for name in (SOURCE, HIDDEN):
            client.create_topic(name, 2)
        grant(
            bootstrap,
            [
                Acl("GROUP", READ_DENIED, "READ", "DENY"),
                Acl("TOPIC", HIDDEN, "DESCRIBE", "DENY"),
                Acl("GROUP", DESCRIBE_DENIED, "DESCRIBE", "DENY"),
                Acl("TOPIC", f"{CREATE_DENIED}-", "CREATE", "DENY", pattern="PREFIXED"),
                Acl("TOPIC", f"{CREATE_DENIED}-", "DESCRIBE", "ALLOW", pattern="PREFIXED"),
                Acl("CLUSTER", "kafka-cluster", "CREATE", "DENY"),
            ],
        )
        for group in ("acl-free", READ_DENIED, TOPIC_DENIED, DESCRIBE_DENIED, CREATE_DENIED):
            _until_coordinator(client, group)
        # Kafka's brokers learn of new ACLs from the controller: one of them denied, then
        # a moment for the rest
        _until_answered(client, DESCRIBE, {"group_ids": [DESCRIBE_DENIED]}, denied=True)
        time.sleep(1)

        def heartbeat(group: str, shape: dict[str, Any]) -> Any:
            request = body(group, "member", 0, **joining(shape))
            answer = _until_answered(client, HEARTBEAT, request)
            return (
                int(answer.error_code),
                answer.error_message,
                [(int(s.status_code), s.status_detail) for s in answer.status or ()],
            )

        answers.append(heartbeat(READ_DENIED, topology(SOURCE)))
        answers.append(heartbeat(TOPIC_DENIED, topology(HIDDEN)))
        answers.append(heartbeat(DESCRIBE_DENIED, topology(SOURCE)))
        changelog = f"{CREATE_DENIED}-counts-changelog"
        answers.append(heartbeat(CREATE_DENIED, stateful(SOURCE, changelog)))
        time.sleep(1)
        answers.append(heartbeat(CREATE_DENIED, stateful(SOURCE, changelog)))
        known = client.call(
            3, 12, {"topics": [{"name": changelog}], "allow_auto_topic_creation": False}
        )
        answers.append(("changelog", int(known.topics[0].error_code)))
        for group in (DESCRIBE_DENIED, CREATE_DENIED, READ_DENIED):
            request = {"group_ids": [group], "include_authorized_operations": True}
            described = _until_answered(client, DESCRIBE, request).groups[0]
            answers.append(
                (
                    group,
                    int(described.error_code),
                    described.error_message,
                    described.group_state,
                    len(described.members),
                    described.authorized_operations,
                )  # fmt: skip
            )
    return answers


def _until_answered(
    client: WireClient, api_key: int, request: dict[str, Any], denied: bool = False
) -> Any:
    """The answer once the group's coordinator is loaded (a client retries 14, 15 and
    16, which change nothing); with `denied`, once it is GROUP_AUTHORIZATION_FAILED."""
    deadline = time.monotonic() + 30
    while True:
        answer = client.call(api_key, 0, request)
        groups = getattr(answer, "groups", None)
        code = int(groups[0].error_code if groups else answer.error_code)
        if (code == 30) if denied else (code not in (14, 15, 16)):
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)


def _until_coordinator(client: WireClient, group: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        found = client.call(10, 4, {"key_type": 0, "coordinator_keys": [group]})
        if found.coordinators[0].error_code in (0, 30):  # found, or not ours to ask
            return
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def test_streams_groups_follow_acls(
    broker_factory: BrokerFactory, kafka_with_acls: ReferenceKafka
) -> None:
    odradek = broker_factory(SETTINGS)
    kafka = scenario(kafka_with_acls.bootstrap)
    assert scenario(odradek.bootstrap) == kafka
    read, topic, _describe_ok, missing, still_missing, changelog = kafka[:6]
    assert read[0] == 30  # GROUP_AUTHORIZATION_FAILED
    assert topic[0] == 29  # TOPIC_AUTHORIZATION_FAILED
    assert missing[0] == 0 and any("Unauthorized to CREATE" in d for _, d in missing[2])
    assert any("Unauthorized to CREATE" in d for _, d in still_missing[2])
    assert changelog == ("changelog", 3)  # UNKNOWN_TOPIC_OR_PARTITION: never created
    assert kafka[6][1] == 30  # StreamsGroupDescribe without DESCRIBE on the group
