"""Broker settings from a server.properties file, and AlterConfigs replacing a topic's set."""

from __future__ import annotations

from helpers.broker import Broker
from helpers.wire import WireClient

METADATA, DESCRIBE_CONFIGS, ALTER_CONFIGS = 3, 32, 33


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
