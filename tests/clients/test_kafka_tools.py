"""Kafka 4.4's own command-line tools against Odradek and against Kafka 4.4.

`kafka-features`: the same features described, the same refusals, and a downgrade and
upgrade that both brokers carry out and report alike. `kafka-configs`: deleting a
broker setting that was never set is a no-op on both."""

from __future__ import annotations

import re

import pytest
from helpers.broker import Broker, BrokerFactory
from helpers.kafka_tools import configs, features
from helpers.reference_kafka import ReferenceKafka
from helpers.wire import WireClient

# what legitimately differs between two runs: the epoch of the levels
EPOCH = re.compile(r"Epoch: \d+")


def described(bootstrap: str) -> list[str]:
    done = features("--bootstrap-server", bootstrap, "describe")
    assert done.returncode == 0, done.stderr
    return [EPOCH.sub("Epoch: <n>", " ".join(line.split())) for line in done.stdout.splitlines()]


def levels(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        match = re.match(r"Feature: (\S+) .*FinalizedVersionLevel: (\S+)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


@pytest.fixture
def both(kafka44: ReferenceKafka, shared_broker: Broker) -> dict[str, str]:
    return {"kafka": kafka44.bootstrap, "odradek": shared_broker.bootstrap}


def test_describe_lists_the_same_features(both: dict[str, str]) -> None:
    kafka, odradek = described(both["kafka"]), described(both["odradek"])
    assert len(odradek) == 7, odradek
    assert odradek == kafka
    assert levels(odradek)["transaction.version"] == "2"


def test_refusals_print_what_kafka_prints(both: dict[str, str]) -> None:
    asks = [
        ["upgrade", "--feature", "group.version=2"],
        ["upgrade", "--feature", "no.such.version=1"],
        ["downgrade", "--metadata", "4.3-IV0"],
        ["upgrade", "--feature", "group.version=0"],
    ]
    for ask in asks:
        answers = [features("--bootstrap-server", both[name], *ask) for name in both]
        kafka, odradek = answers
        assert kafka.returncode != 0, kafka.stdout
        assert (odradek.returncode, odradek.stdout) == (kafka.returncode, kafka.stdout), ask


def test_disable_then_upgrade_group_version(both: dict[str, str]) -> None:
    for name, bootstrap in both.items():
        try:
            disabled = features(
                "--bootstrap-server", bootstrap, "disable", "--feature", "group.version"
            )
            assert disabled.returncode == 0, (name, disabled.stdout, disabled.stderr)
            assert "group.version was disabled." in disabled.stdout, (name, disabled.stdout)
            assert levels(described(bootstrap))["group.version"] == "0", name
        finally:
            upgraded = features(
                "--bootstrap-server", bootstrap, "upgrade", "--feature", "group.version=1"
            )
        assert upgraded.returncode == 0, (name, upgraded.stdout, upgraded.stderr)
        assert levels(described(bootstrap))["group.version"] == "1", name


def test_levels_survive_a_restart(broker_factory: BrokerFactory) -> None:
    broker = broker_factory()
    disabled = features(
        "--bootstrap-server", broker.bootstrap, "disable", "--feature", "share.version"
    )
    assert disabled.returncode == 0, disabled.stderr
    broker.restart()
    assert levels(described(broker.bootstrap))["share.version"] == "0"
    with WireClient(broker.bootstrap) as client:
        body = {
            "group_id": "g",
            "member_id": "member-of-a-disabled-type",
            "member_epoch": 0,
            "subscribed_topic_names": ["t"],
            "rack_id": None,
        }
        assert client.call(76, 1, body).error_code == 35  # UNSUPPORTED_VERSION


def test_deleting_an_unset_broker_setting_is_a_no_op(both: dict[str, str]) -> None:
    for name, bootstrap in both.items():
        done = configs(
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-name",
            "0",
            "--delete-config",
            "log.cleaner.threads,leader.replication.throttled.rate",
        )
        assert done.returncode == 0, (name, done.stdout, done.stderr)
        assert "Completed updating config for broker 0." in done.stdout, (name, done.stdout)
