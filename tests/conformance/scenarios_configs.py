"""Scenarios of configs beyond scenarios_topics.py: DescribeConfigs of a broker (its
delegation-token settings with and without a secret key), of the cluster's defaults
and of the broker's loggers, with documentation (whether there is one; each broker's
words are its own) and synonyms; AlterConfigs (the whole
set at once); IncrementalAlterConfigs of broker resources and with operations Kafka
refuses."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_topics import (
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    Resources,
    incremental_body,
    quietly_create,
)

ALTER_CONFIGS = 33
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
LONG, PASSWORD = 5, 9
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
NODE = "0"  # both brokers of the default pair are node 0


def describe(
    run: Run,
    resource_type: int,
    name: str,
    keys: list[str] | None,
    synonyms: bool = False,
    documentation: bool = False,
    view: Callable[[Any], Any] | None = None,
) -> Any:
    body = {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}
        ],
        "include_synonyms": synonyms,
        "include_documentation": documentation,
    }
    return run.call(DESCRIBE_CONFIGS, 4, body, view=view)


def by_name(answer: Any) -> Any:
    """The answer with each resource's configs in name order (Kafka lists a group's in
    the order of a Java hash map of the names it has, Odradek by name)."""
    results = [
        dataclasses.replace(r, configs=tuple(sorted(r.configs, key=lambda c: c.name)))
        for r in answer.results
    ]
    return dataclasses.replace(answer, results=tuple(results))


def alter(
    run: Run,
    resources: list[tuple[int, str, dict[str, str | None]]],
    validate_only: bool = False,
) -> Any:
    body = {
        "resources": [
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
            for kind, name, configs in resources
        ],
        "validate_only": validate_only,
    }
    return run.call(ALTER_CONFIGS, 2, body)


def incremental(run: Run, resources: Resources, validate_only: bool = False) -> Any:
    return run.call(INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(resources, validate_only))


# broker settings neither broker of the default pair sets, and Kafka cannot change at
# run time
BROKER_KEYS = [
    "log.retention.hours",
    "log.retention.minutes",
    "num.partitions",
    "auto.create.topics.enable",
    "delete.topic.enable",
    "default.replication.factor",
    "offsets.topic.num.partitions",
    "socket.request.max.bytes",
]
# ... and ones Kafka can change at run time
DYNAMIC_BROKER_KEYS = ["log.retention.ms", "message.max.bytes", "log.cleanup.policy"]
# the delegation-token settings (the secret key a password), asked for with neighbours
# of theirs in Kafka's order (read-only ones): each broker answers in its own order,
# not the request's
DELEGATION_TOKEN_KEYS = {
    "delegation.token.secret.key": PASSWORD,
    "delegation.token.max.lifetime.ms": LONG,
    "delegation.token.expiry.time.ms": LONG,
    "delegation.token.expiry.check.interval.ms": LONG,
}
DELEGATION_TOKEN_NEIGHBOURS = [
    "transaction.state.log.num.partitions",
    "group.share.heartbeat.interval.ms",
    "group.share.max.share.sessions",
    "transaction.max.timeout.ms",
]


@scenario("describe-configs.broker", "a broker's configs, by its id and as the cluster default")
def _describe_broker(run: Run) -> None:
    describe(run, BROKER, NODE, BROKER_KEYS)
    describe(run, BROKER, NODE, BROKER_KEYS[:3], synonyms=True)
    describe(run, BROKER, "", BROKER_KEYS)
    describe(run, BROKER, NODE, ["no.such.config"])
    describe(run, BROKER, "7", BROKER_KEYS)
    describe(run, BROKER, "one", BROKER_KEYS)
    describe_delegation_token_settings(run, secret_key_set=False)


@scenario(
    "describe-configs.delegation-token-secret",
    "a broker's delegation-token settings, its secret key set",
    secure=True,
)
def _describe_delegation_token_secret(run: Run) -> None:
    describe_delegation_token_settings(run, secret_key_set=True)


def describe_delegation_token_settings(run: Run, secret_key_set: bool) -> None:
    """The four delegation-token settings, with synonyms: both brokers list them, the
    secret key sensitive (no value, set or not); the rest is compared with Kafka's."""
    keys = sorted([*DELEGATION_TOKEN_KEYS, *DELEGATION_TOKEN_NEIGHBOURS])
    answer = describe(run, BROKER, NODE, keys, synonyms=True)
    configs = {c.name: c for c in answer.results[0].configs}
    for name, config_type in DELEGATION_TOKEN_KEYS.items():
        assert name in configs, f"{name} not described"
        config = configs[name]
        assert config.config_type == config_type, config
        assert config.is_sensitive == (config_type == PASSWORD), config
    secret = configs["delegation.token.secret.key"]
    assert secret.value is None, secret
    expected_source = STATIC_BROKER_CONFIG if secret_key_set else DEFAULT_CONFIG
    assert secret.config_source == expected_source, secret
    synonyms = [(s.value, s.source) for s in secret.synonyms]
    assert synonyms == ([(None, STATIC_BROKER_CONFIG)] if secret_key_set else []), secret


@scenario("describe-configs.topic-synonyms", "what provides each of a topic's configs")
def _describe_synonyms(run: Run) -> None:
    quietly_create(run, run.name("s"))
    set_topic_configs(run, run.name("s"), {"retention.ms": "1000", "cleanup.policy": "compact"})
    keys = ["retention.ms", "cleanup.policy", "segment.bytes", "segment.ms", "compression.type"]
    describe(run, TOPIC, run.name("s"), keys, synonyms=True)


def set_topic_configs(run: Run, name: str, configs: dict[str, str]) -> None:
    settings: list[tuple[str, int, str | None]] = [(k, SET, v) for k, v in configs.items()]
    run.quiet(INCREMENTAL_ALTER_CONFIGS, 1, incremental_body([(TOPIC, name, settings)]))


def documented(answer: Any) -> Any:
    """The answer by name (see by_name) with each documentation text made "<text>": each
    broker says what a config does in its own words (null and empty stay as they are)."""

    def config(c: Any) -> Any:
        return dataclasses.replace(c, documentation="<text>" if c.documentation else None)

    results = [
        dataclasses.replace(r, configs=tuple(config(c) for c in r.configs))
        for r in by_name(answer).results
    ]
    return dataclasses.replace(answer, results=tuple(results))


@scenario(
    "describe-configs.documentation",
    "configs of a topic, a broker, a group, a client-metrics subscription and the loggers, "
    "with and without their documentation",
)
def _describe_documentation(run: Run) -> None:
    quietly_create(run, run.name("d"))
    resources = [
        (TOPIC, run.name("d"), ["retention.ms", "segment.bytes", "compression.type"]),
        (BROKER, NODE, ["num.partitions", "auto.create.topics.enable", "socket.request.max.bytes"]),
        (GROUP, run.name("g"), ["consumer.session.timeout.ms", "share.isolation.level"]),
        (CLIENT_METRICS, run.name("s"), None),
    ]
    for documentation in (True, False):
        for kind, name, keys in resources:
            describe(run, kind, name, keys, documentation=documentation, view=documented)
        describe(run, BROKER_LOGGER, NODE, ["root"], documentation=documentation)


@scenario("describe-configs.dynamic-broker-configs", "broker settings Kafka changes at run time")
def _describe_dynamic(run: Run) -> None:
    describe(run, BROKER, NODE, DYNAMIC_BROKER_KEYS, synonyms=True)


@scenario("describe-configs.broker-logger", "the broker's loggers")
def _describe_loggers(run: Run) -> None:
    describe(run, BROKER_LOGGER, NODE, ["root"])
    describe(run, BROKER_LOGGER, "7", ["root"])
    describe(run, BROKER_LOGGER, "", ["root"])
    describe(run, BROKER_LOGGER, "one", ["root"])


@scenario("describe-configs.bad-resources", "an unknown resource type, a group, several at once")
def _describe_bad_resources(run: Run) -> None:
    describe(run, 99, "x", None)
    describe(run, 0, "x", None)
    describe(run, TOPIC, "", ["retention.ms"])
    describe(run, GROUP, run.name("g"), ["consumer.session.timeout.ms"])
    describe(run, GROUP, "", ["consumer.session.timeout.ms"])


@scenario("alter-configs.topic", "a topic's configs replaced whole, validated, reset")
def _alter_topic(run: Run) -> None:
    name = run.name("a")
    quietly_create(run, name)
    keys = ["retention.ms", "cleanup.policy", "max.message.bytes"]
    alter(run, [(TOPIC, name, {"retention.ms": "70000", "cleanup.policy": "compact"})])
    describe(run, TOPIC, name, keys)
    alter(run, [(TOPIC, name, {"max.message.bytes": "2000"})], validate_only=True)
    alter(run, [(TOPIC, name, {"max.message.bytes": "2000"})])
    describe(run, TOPIC, name, keys)
    alter(run, [(TOPIC, name, {})])
    describe(run, TOPIC, name, keys)


@scenario("alter-configs.invalid", "unknown topic, name, value, resource type; a null value")
def _alter_invalid(run: Run) -> None:
    name = run.name("b")
    quietly_create(run, name)
    alter(run, [(TOPIC, run.name("none"), {"retention.ms": "1"})])
    alter(run, [(TOPIC, name, {"no.such.config": "1"})])
    alter(run, [(TOPIC, name, {"retention.ms": "soon"})])
    alter(run, [(TOPIC, name, {"retention.ms": None})])
    alter(run, [(TOPIC, name, {"cleanup.policy": "sometimes"})])
    alter(run, [(99, name, {"retention.ms": "1"})])
    # (not one resource twice in a request: Kafka 4.4 never answers that, an
    # IllegalStateException in its handler)


@scenario("alter-configs.broker", "a broker's configs through AlterConfigs")
def _alter_broker(run: Run) -> None:
    alter(run, [(BROKER, NODE, {"num.partitions": "3"})], validate_only=True)
    alter(run, [(BROKER, "", {"num.partitions": "3"})], validate_only=True)
    alter(run, [(BROKER, "7", {"num.partitions": "2"})], validate_only=True)
    alter(run, [(BROKER, "one", {"num.partitions": "2"})], validate_only=True)
    alter(run, [(BROKER_LOGGER, NODE, {"root": "DEBUG"})], validate_only=True)


@scenario("incremental-alter-configs.broker", "a broker's and the cluster's configs; loggers")
def _incremental_broker(run: Run) -> None:
    incremental(run, [(BROKER, NODE, [("num.partitions", SET, "3")])], validate_only=True)
    incremental(run, [(BROKER, "7", [("num.partitions", SET, "2")])], validate_only=True)
    incremental(run, [(BROKER, "", [("num.partitions", SET, "3")])], validate_only=True)
    incremental(run, [(BROKER_LOGGER, NODE, [("root", SET, "DEBUG")])], validate_only=True)
    incremental(run, [(BROKER_LOGGER, NODE, [("no.such.logger", SET, "DEBUG")])])
    incremental(run, [(BROKER_LOGGER, NODE, [("root", SET, "LOUD")])])
    incremental(run, [(BROKER_LOGGER, NODE, [("root", DELETE, None)])])
    incremental(run, [(BROKER_LOGGER, NODE, [("root", APPEND, "DEBUG")])])
    incremental(run, [(BROKER_LOGGER, "7", [("root", SET, "DEBUG")])])


@scenario("incremental-alter-configs.broker-deletes", "deleting broker settings never set")
def _incremental_broker_deletes(run: Run) -> None:
    # what kafka-reassign-partitions --verify sends to clear replication throttles
    throttles = [
        ("leader.replication.throttled.rate", DELETE, None),
        ("follower.replication.throttled.rate", DELETE, None),
        ("replica.alter.log.dirs.io.max.bytes.per.second", DELETE, None),
    ]
    for name in (NODE, ""):
        incremental(run, [(BROKER, name, throttles)])
        incremental(run, [(BROKER, name, [("log.cleaner.threads", DELETE, None)])])
        incremental(run, [(BROKER, name, [("log.dirs", DELETE, None)])], validate_only=True)
        incremental(run, [(BROKER, name, [("no.such.config", DELETE, None)])])
    incremental(run, [(BROKER, "7", [("log.cleaner.threads", DELETE, None)])])


@scenario("configs.dynamic-broker-changes", "broker settings Kafka changes at run time")
def _dynamic_broker_changes(run: Run) -> None:
    alter(run, [(BROKER, NODE, {"message.max.bytes": "2000000"})], validate_only=True)
    incremental(run, [(BROKER, NODE, [("log.retention.ms", SET, "1000")])], validate_only=True)
    incremental(run, [(BROKER, NODE, [("no.such.config", SET, "3")])], validate_only=True)


@scenario("incremental-alter-configs.bad-operations", "APPEND to a non-list, a key twice")
def _incremental_bad(run: Run) -> None:
    name = run.name("c")
    quietly_create(run, name)
    incremental(run, [(TOPIC, name, [("retention.ms", APPEND, "1")])])
    incremental(run, [(TOPIC, name, [("retention.ms", SUBTRACT, "1")])])
    # (not an unknown operation: Kafka 4.4's controller fails on one and gives up its
    # leadership)
    incremental(run, [(TOPIC, name, [("retention.ms", SET, None)])])
    incremental(run, [(TOPIC, name, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")])])
    incremental(run, [(99, name, [("retention.ms", SET, "1")])])
    incremental(run, [(TOPIC, name, [("cleanup.policy", SUBTRACT, "compact")])])
    incremental(run, [(TOPIC, name, [("cleanup.policy", APPEND, "sometimes")])])
    describe(run, TOPIC, name, ["retention.ms", "cleanup.policy"])


def until_group_has(run: Run, group: str, name: str, value: str | None) -> None:
    """Until the group's config `name` is `value` as set on it (None: not set): Kafka
    applies a group config change through its metadata log, a moment after answering."""

    def ask() -> Any:
        body = {
            "resources": [
                {"resource_type": GROUP, "resource_name": group, "configuration_keys": [name]}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        }
        return run.quiet(DESCRIBE_CONFIGS, 4, body)

    def done(answer: Any) -> bool:
        own = [c.value for c in answer.results[0].configs if c.config_source == 8]
        return own == ([] if value is None else [value])

    run.until(ask, done)


STREAMS_GROUP_KEYS = [
    "streams.num.standby.replicas",
    "streams.task.offset.interval.ms",
    "streams.acceptable.recovery.lag",
    "streams.num.warmup.replicas",
    "streams.rack.aware.assignment.tags",
    "streams.assignor.name",
    "streams.assignor.offload.enable",
]


@scenario(
    "group-configs.streams",
    "streams group configs: internal ones described only once set, bounds, tags, assignors",
)
def _streams_group_configs(run: Run) -> None:
    group = run.name("app")
    describe(run, GROUP, group, STREAMS_GROUP_KEYS, synonyms=True, view=by_name)
    refused = [
        ("streams.num.warmup.replicas", "21"),
        ("streams.num.warmup.replicas", "-1"),
        ("streams.num.warmup.replicas", "x"),
        ("streams.acceptable.recovery.lag", "-1"),
        ("streams.acceptable.recovery.lag", "abc"),
        ("streams.task.offset.interval.ms", "14999"),
        ("streams.task.offset.interval.ms", "0"),
        ("streams.task.offset.interval.ms", "99999999999"),
        ("streams.assignor.offload.enable", "maybe"),
        ("streams.assignor.name", "fancy"),
        ("streams.assignor.name", ""),
        ("streams.rack.aware.assignment.tags", "zone, rack ,zone"),
        ("streams.rack.aware.assignment.tags", ","),
        ("streams.rack.aware.assignment.tags", "zone,,rack"),
        ("streams.num.standby.replicas", "3"),
        ("streams.heartbeat.interval.ms", "100"),
        ("streams.session.timeout.ms", "100"),
        ("streams.assignment.interval.ms", "15001"),
    ]
    for name, value in refused:
        incremental(run, [(GROUP, group, [(name, SET, value)])])
    # the first refusal in Kafka's order of checks is the one told
    incremental(
        run,
        [
            (
                GROUP,
                group,
                [
                    ("streams.num.warmup.replicas", SET, "99"),
                    ("streams.num.standby.replicas", SET, "9"),
                    ("streams.assignor.name", SET, "x"),
                    ("streams.rack.aware.assignment.tags", SET, "a,a"),
                ],
            )
        ],
    )
    accepted = [
        ("streams.num.warmup.replicas", SET, "3"),
        ("streams.acceptable.recovery.lag", SET, "99999999999"),
        ("streams.task.offset.interval.ms", SET, "15000"),
        ("streams.assignor.offload.enable", SET, "TRUE"),
        ("streams.assignor.name", SET, "sticky"),
        ("streams.rack.aware.assignment.tags", SET, " zone , rack "),
    ]
    incremental(run, [(GROUP, group, accepted)])
    until_group_has(run, group, "streams.rack.aware.assignment.tags", "zone,rack")
    describe(run, GROUP, group, STREAMS_GROUP_KEYS, synonyms=True, view=by_name)
    incremental(run, [(GROUP, group, [("streams.rack.aware.assignment.tags", APPEND, "x")])])
    incremental(run, [(GROUP, group, [("streams.rack.aware.assignment.tags", SUBTRACT, "zone")])])
    incremental(run, [(GROUP, group, [("streams.num.warmup.replicas", DELETE, None)])])
    until_group_has(run, group, "streams.num.warmup.replicas", None)
    describe(run, GROUP, group, STREAMS_GROUP_KEYS, view=by_name)
    alter(run, [(GROUP, group, {"streams.rack.aware.assignment.tags": "a,a"})])
    alter(run, [(GROUP, group, {"streams.acceptable.recovery.lag": "7"})])
    until_group_has(run, group, "streams.acceptable.recovery.lag", "7")
    describe(run, GROUP, group, STREAMS_GROUP_KEYS, view=by_name)
