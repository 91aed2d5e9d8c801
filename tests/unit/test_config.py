"""Broker settings as pure functions: listeners, the apache/kafka image's environment
variables, unknown and malformed settings, the health probe's bytes."""

from __future__ import annotations

import dataclasses
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from odradek.broker.observability import health
from odradek.broker.settings import client_metrics, group_configs, topic_configs
from odradek.broker.settings.broker_configs import DESCRIBE_ORDER
from odradek.broker.settings.config import (
    KAFKA_BROKER_SETTINGS,
    READ_BY_SECURITY,
    SECURITY_DOCS,
    SETTINGS,
    BrokerConfig,
    ConfigError,
    documentation,
    is_kafka_setting,
)
from odradek.broker.settings.group_configs import shard_config
from odradek.broker.settings.kafka_settings import NOT_READ
from odradek.broker.settings.listeners import Listener, ListenerError, parse_endpoints, resolve
from odradek.broker.settings.setting import BOOLEAN, INT, LONG, SHORT
from odradek.broker.settings.sources import read_properties, settings_from_environment


def test_the_usual_compose_pair_of_listeners() -> None:
    listeners = resolve(
        "INTERNAL://:29092,EXTERNAL://0.0.0.0:9092",
        "INTERNAL://kafka:29092,EXTERNAL://localhost:9092",
        "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
    )
    assert listeners == [
        Listener("INTERNAL", "PLAINTEXT", "", 29092, "kafka", 29092),
        Listener("EXTERNAL", "PLAINTEXT", "0.0.0.0", 9092, "localhost", 9092),
    ]


def test_advertised_port_may_differ_and_names_are_not_case_sensitive() -> None:
    [listener] = resolve(
        "plaintext://127.0.0.1:9092", "PLAINTEXT://host.example:19092", "PLAINTEXT:PLAINTEXT"
    )
    assert (listener.name, listener.advertised_host, listener.advertised_port) == (
        "PLAINTEXT",
        "host.example",
        19092,
    )


def test_without_advertised_listeners_each_advertises_where_it_listens() -> None:
    listeners = resolve(
        "PLAINTEXT://127.0.0.1:9092,OTHER://[::1]:9093,ALL://0.0.0.0:9094",
        None,
        "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT,ALL:PLAINTEXT",
    )
    assert [(x.host, x.advertised_host) for x in listeners] == [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("0.0.0.0", "127.0.0.1"),
    ]
    [named] = resolve("PLAINTEXT://:9092", None, "PLAINTEXT:PLAINTEXT", "", "broker.example")
    assert named.advertised_host == "broker.example"


def test_controller_listeners_are_left_out() -> None:
    listeners = resolve(
        "PLAINTEXT://:9092,CONTROLLER://:9093",
        "PLAINTEXT://localhost:9092",
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "CONTROLLER",
    )
    assert [x.name for x in listeners] == ["PLAINTEXT"]


@pytest.mark.parametrize(
    ("listeners", "advertised", "protocols", "words"),
    [
        ("PLAINTEXT://:9092,PLAINTEXT://:9093", None, "PLAINTEXT:PLAINTEXT", "given twice"),
        ("A://:9092,B://:9092", None, "A:PLAINTEXT,B:PLAINTEXT", "port of its own"),
        ("PLAINTEXT://:9092", "OTHER://x:9092", "PLAINTEXT:PLAINTEXT", "not one of"),
        ("PLAINTEXT://:9092", "PLAINTEXT://0.0.0.0:9092", "PLAINTEXT:PLAINTEXT", "cannot connect"),
        ("INTERNAL://:9092", None, "PLAINTEXT:PLAINTEXT", "no security protocol"),
        ("PLAINTEXT://:99999", None, "PLAINTEXT:PLAINTEXT", "out of range"),
        ("localhost:9092", None, "PLAINTEXT:PLAINTEXT", "NAME://host:port"),
        ("", None, "PLAINTEXT:PLAINTEXT", "no listener"),
        ("PLAINTEXT://:9092", None, "PLAINTEXT:TLS", "NAME:PROTOCOL"),
    ],
)
def test_listener_settings_that_cannot_work(
    listeners: str, advertised: str | None, protocols: str, words: str
) -> None:
    with pytest.raises(ListenerError, match=words):
        resolve(listeners, advertised, protocols)


def test_endpoints_keep_bracketed_ipv6_hosts() -> None:
    assert [(e.host, e.port) for e in parse_endpoints("listeners", "X://[::1]:1,Y://h:2")] == [
        ("::1", 1),
        ("h", 2),
    ]


def test_environment_variables_as_the_apache_kafka_image_reads_them() -> None:
    settings = settings_from_environment(
        {
            "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kafka:9092",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT",
            "KAFKA_NUM_PARTITIONS": "3",
            "KAFKA_SOME__UNDER___DASH": "x",
            "KAFKA_HEAP_OPTS": "-Xmx1G",  # a JVM option, not a setting
            "CLUSTER_ID": "abc",
            "PATH": "/bin",
        }
    )
    assert settings == {
        "advertised.listeners": "PLAINTEXT://kafka:9092",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
        "num.partitions": "3",
        "some_under-dash": "x",
        "cluster.id": "abc",
    }


def test_without_kafka_variables_the_image_defaults_apply() -> None:
    assert settings_from_environment({"PATH": "/bin"}) == {
        "listeners": "PLAINTEXT://:9092",
        "advertised.listeners": "PLAINTEXT://localhost:9092",
    }


def test_kafka_settings_without_use_on_one_node_are_accepted_and_kept() -> None:
    config = BrokerConfig()
    config.apply(
        {
            "offsets.topic.replication.factor": "1",
            "background.threads": "10",
            "controller.quorum.voters": "1@kafka:9093",
            "process.roles": "broker,controller",
            "listener.name.internal.ssl.keystore.location": "/x",
            "num.partitions": "4",
        }
    )
    assert config.num_partitions == 4
    assert config.offsets_topic_replication_factor == 1
    assert set(config.unused) == {
        "background.threads",
        "listener.name.internal.ssl.keystore.location",
    }
    assert config.process_roles == "broker,controller"  # read: they place the node


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"num.partition": "3"}, "num.partition: not a Kafka broker setting"),
        ({"listener.name.x.no.such.thing": "1"}, "not a Kafka broker setting"),
        ({"num.partitions": "three"}, "num.partitions='three': expected a whole number"),
        ({"auto.create.topics.enable": "yes"}, "expected true or false"),
    ],
)
def test_unknown_and_malformed_settings_are_named(settings: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        BrokerConfig().apply(settings)


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"quota.window.num": "0"}, "quota.window.num: must be at least 1"),
        (
            {"group.consumer.migration.policy": " Some "},
            "group.consumer.migration.policy='some': not one of disabled, upgrade, ",
        ),
        (
            {"group.streams.num.warmup.replicas": "21"},
            "group.streams.num.warmup.replicas must not be greater than "
            "group.streams.max.warmup.replicas",
        ),
        (
            {"group.streams.rack.aware.assignment.tags": "zone, zone"},
            "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
        ),
        ({"group.streams.assignors": "sticky,fancy"}, "a list of distinct built-in assignors"),
    ],
)
def test_settings_out_of_bounds_are_named(settings: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        BrokerConfig().apply(settings)


def test_checks_keep_values_in_their_usual_form() -> None:
    config = BrokerConfig()
    config.apply({"group.consumer.migration.policy": "UPGRADE", "broker.id": "3"})
    assert config.group_consumer_migration_policy == "upgrade"
    assert config.node_id == 3
    config.apply({"delegation.token.secret.key": ""})
    assert config.delegation_token_secret_key is None  # an empty key: no delegation tokens


def test_each_setting_is_declared_once_with_a_type_its_field_holds() -> None:
    assert not set(SETTINGS) & NOT_READ
    assert not set(SETTINGS) & READ_BY_SECURITY
    assert not NOT_READ & READ_BY_SECURITY
    assert len(set(DESCRIBE_ORDER)) == len(DESCRIBE_ORDER)
    assert set(DESCRIBE_ORDER) <= set(SETTINGS)
    # (BrokerConfig's fields include those of LogSettings and CoordinatorSettings)
    annotations = {f.name: f.type for f in dataclasses.fields(BrokerConfig)}
    for name, (attribute, declared) in SETTINGS.items():
        python_type = {BOOLEAN: "bool", INT: "int", SHORT: "int", LONG: "int"}
        expected = python_type.get(declared.config_type, "str")
        assert annotations[attribute] in (expected, f"{expected} | None"), name


def test_every_kafka_broker_setting_is_documented() -> None:
    """A declared setting's doc is its own; a security setting's is in SECURITY_DOCS; the
    ones Odradek does not read share one sentence."""
    for name, (_attribute, declared) in SETTINGS.items():
        assert declared.doc.strip(), f"{name} has no doc"
        assert documentation(name) == declared.doc
    for name in KAFKA_BROKER_SETTINGS:
        assert documentation(name).strip(), name
    assert documentation("super.users") == SECURITY_DOCS["super.users"]
    assert documentation("background.threads") == documentation("log.cleaner.threads")
    with pytest.raises(KeyError):
        documentation("no.such.setting")


def test_every_topic_group_and_client_metrics_config_is_documented() -> None:
    for name, topic_config in topic_configs.DEFINITIONS.items():
        assert topic_config.doc.strip(), name
    for name, group_config in group_configs.DEFINITIONS.items():
        assert group_config.doc.strip(), name
    assert set(client_metrics.DOCS) == set(client_metrics.TYPES)
    assert all(doc.strip() for doc in client_metrics.DOCS.values())


def test_group_shards_run_with_the_broker_settings() -> None:
    config = BrokerConfig()
    config.apply(
        {
            "group.initial.rebalance.delay.ms": "3000",
            "offsets.retention.minutes": "2",
            "group.consumer.session.timeout.ms": "50000",
        }
    )
    shards = shard_config(config)
    assert shards.initial_rebalance_delay_ms == 3000
    assert shards.offsets_retention_ms == 120000
    assert shards.timeouts("any group").consumer_session_timeout_ms == 50000


def test_kafka_setting_names() -> None:
    for name in ("log.retention.hours", "num.network.threads", "zookeeper.connect", "port"):
        assert is_kafka_setting(name), name
    assert not is_kafka_setting("log.retention.hour")


def test_health_probe_bytes() -> None:
    request = health.api_versions_request()
    size, api_key, version, correlation = struct.unpack_from(">ihhi", request)
    assert (size, api_key, version) == (len(request) - 4, 18, 0)
    good = struct.pack(">ihi", correlation, 0, 1) + struct.pack(">hhh", 0, 0, 9)
    assert health.check_api_versions_response(good) == 1
    with pytest.raises(health.Unhealthy, match="error code 35"):
        health.check_api_versions_response(struct.pack(">ihi", correlation, 35, 0))
    with pytest.raises(health.Unhealthy, match="another request"):
        health.check_api_versions_response(struct.pack(">ihi", correlation + 1, 0, 1))
    with pytest.raises(health.Unhealthy, match="short"):
        health.check_api_versions_response(b"\x00")


def test_health_check_finds_the_first_listener() -> None:
    assert health.default_bootstrap("") == "127.0.0.1:9092"
    assert health.default_bootstrap("INTERNAL://:29092,EXTERNAL://:9092") == "127.0.0.1:29092"
    assert health.default_bootstrap("PLAINTEXT://10.0.0.5:9093") == "10.0.0.5:9093"
    # not a controller listener (Testcontainers' Java module lists them in any order)
    java = "CONTROLLER://0.0.0.0:9094,TC-0://0.0.0.0:19092,PLAINTEXT://0.0.0.0:9092"
    assert health.default_bootstrap(java, "CONTROLLER") == "127.0.0.1:19092"
    # a controller of its own (compose.cluster.yaml's) has only its controller listener
    assert health.default_bootstrap("CONTROLLER://:9093", "CONTROLLER") == "127.0.0.1:9093"


def test_the_health_command_imports_the_probe_alone() -> None:
    # a container's health check runs it every second: the broker's modules stay out
    code = (
        "import sys\n"
        "from odradek.broker import command\n"
        "try:\n"
        "    command.main(['health', '--bootstrap', '127.0.0.1:1', '--timeout', '0.5'])\n"
        "except SystemExit as exc:\n"
        "    print(exc.code, 'odradek.broker.cli' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split() == ["1", "False"], done.stderr


def test_properties_lines_continue_after_a_trailing_backslash(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment ending in a backslash does not continue \\\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=\\\n"
        "    org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    user_admin="admin-secret";\n'
        "path=C:\\\\\n"
        "num.partitions = 3\n"
    )
    assert read_properties(path) == {
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'user_admin="admin-secret";'
        ),
        "path": "C:\\\\",  # an even number of backslashes ends the line
        "num.partitions": "3",
    }


def test_log_directories_from_log_dirs_log_dir_or_the_data_dir_option(tmp_path: Path) -> None:
    """log.dirs is read (log.dir where it is not set, --data-dir over both): the
    directories in force are its value, as DescribeConfigs describes it."""
    from odradek.broker import cli

    def directories(properties: str, *args: str) -> tuple[str, tuple[Path, ...]]:
        path = tmp_path / "server.properties"
        path.write_text(properties)
        config = cli.build_config(cli.parse_args(["--config", str(path), *args]))
        assert "log.dirs" not in config.unused and "log.dir" not in config.unused
        return config.log_dirs, config.directories()

    assert BrokerConfig().directories() == (Path("data"),)
    assert directories("log.dirs=/a, /b\nlog.dir=/c\n") == ("/a,/b", (Path("/a"), Path("/b")))
    assert directories("log.dir=/c\nnum.partitions=2\n") == ("/c", (Path("/c"),))
    assert directories("log.dirs=/a\n", "--data-dir", "/d,/e")[0] == "/d,/e"
    config = BrokerConfig()
    config.apply({"log.dirs": "/a,/b"})
    assert (config.data_dir, config.raw["log.dirs"]) == (Path("/a"), "/a,/b")
    for bad, words in (("", "names no directory"), ("/a,/a/", "names a directory twice")):
        with pytest.raises(ConfigError, match=words):
            BrokerConfig().apply({"log.dirs": bad})
    assert documentation("log.dirs") != documentation("background.threads")
    assert "log.dirs" not in NOT_READ and "log.dir" not in NOT_READ


def test_bad_initial_controllers_stop_the_start_with_the_reason(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "odradek",
            "--data-dir",
            str(tmp_path),
            "--initial-controllers",
            "1@host-without-port",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "--initial-controllers: '1@host-without-port' is not id@host:port:directory-id" in (
        done.stderr + done.stdout
    )
