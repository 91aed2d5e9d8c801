"""Broker settings from a server.properties file, the log directories as DescribeConfigs
describes them, and AlterConfigs replacing a topic's set."""

from __future__ import annotations

from pathlib import Path

from helpers.broker import Broker
from helpers.wire import WireClient

from odradek.broker.settings.config import documentation

METADATA, DESCRIBE_CONFIGS, ALTER_CONFIGS = 3, 32, 33
BROKER, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, LIST = 4, 4, 5, 7


def test_server_properties_file(tmp_path, unique_topic) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(
        "# test\nnum.partitions=3\nlog.retention.hours=1\nmessage.max.bytes : 2000000\n"
    )
    broker = Broker(tmp_path / "data", config_file=properties)
    try:
        broker.start()
        with WireClient(broker.bootstrap) as c:
            reply = c.call(
                METADATA, 9, {"topics": [{"name": unique_topic}], "allow_auto_topic_creation": True}
            )
            assert len(reply.topics[0].partitions) == 3
            described = c.call(
                DESCRIBE_CONFIGS,
                4,
                {
                    "resources": [
                        {
                            "resource_type": 2,
                            "resource_name": unique_topic,
                            "configuration_keys": ["retention.ms", "max.message.bytes"],
                        }
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            )
            values = {e.name: (e.value, e.config_source) for e in described.results[0].configs}
            assert values["retention.ms"] == ("3600000", 4)  # STATIC_BROKER_CONFIG
            assert values["max.message.bytes"] == ("2000000", 4)
    finally:
        broker.kill()


def test_describe_configs_tells_the_log_directories_in_force(tmp_path: Path) -> None:
    dirs = [tmp_path / "first", tmp_path / "second"]
    in_force = ",".join(map(str, dirs))
    broker = Broker(dirs[0], log_dir=tmp_path, extra_args=["--data-dir", in_force])
    try:
        broker.start()
        with WireClient(broker.bootstrap) as c:
            described = c.call(
                DESCRIBE_CONFIGS,
                4,
                {
                    "resources": [
                        {
                            "resource_type": BROKER,
                            "resource_name": "0",
                            "configuration_keys": ["log.dirs", "log.dir"],
                        }
                    ],
                    "include_synonyms": True,
                    "include_documentation": True,
                },
            )
    finally:
        broker.kill()
    configs = {e.name: e for e in described.results[0].configs}
    log_dirs, log_dir = configs["log.dirs"], configs["log.dir"]
    assert (log_dirs.value, log_dirs.config_source, log_dirs.config_type) == (
        in_force,
        STATIC_BROKER_CONFIG,
        LIST,
    )
    assert [(s.value, s.source) for s in log_dirs.synonyms] == [
        (in_force, STATIC_BROKER_CONFIG),
        ("data", DEFAULT_CONFIG),
    ]
    assert log_dirs.read_only and not log_dirs.is_sensitive
    assert log_dirs.documentation == documentation("log.dirs")
    assert "directories" in log_dirs.documentation and "not act" not in log_dirs.documentation
    assert (log_dir.value, log_dir.config_source, log_dir.synonyms) == (None, DEFAULT_CONFIG, ())
    assert log_dir.documentation == documentation("log.dir")


def test_alter_configs_replaces_the_whole_set(shared_broker, unique_topic) -> None:
    with WireClient(shared_broker.bootstrap) as c:
        c.create_topic(unique_topic, 1, {"retention.ms": "1000", "segment.bytes": "1048576"})
        altered = c.call(
            ALTER_CONFIGS,
            2,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": unique_topic,
                        "configs": [{"name": "retention.ms", "value": "2000"}],
                    }
                ],
                "validate_only": False,
            },
        )
        assert altered.responses[0].error_code == 0
        bad = c.call(
            ALTER_CONFIGS,
            2,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": unique_topic,
                        "configs": [{"name": "no.such.config", "value": "1"}],
                    }
                ],
                "validate_only": False,
            },
        )
        assert bad.responses[0].error_code == 40  # INVALID_CONFIG
        described = c.call(
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {"resource_type": 2, "resource_name": unique_topic, "configuration_keys": None}
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
        values = {e.name: (e.value, e.config_source) for e in described.results[0].configs}
        assert values["retention.ms"] == ("2000", 1)  # DYNAMIC_TOPIC_CONFIG
        assert values["segment.bytes"][1] == 5, "not given again: back to the default"
