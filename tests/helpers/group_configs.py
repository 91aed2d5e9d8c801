"""A group's configs through the Admin client (librdkafka): set some, describe all."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)


def set_group_configs(bootstrap: str, group: str, configs: Mapping[str, object]) -> None:
    """IncrementalAlterConfigs SET on the GROUP resource; KafkaException when refused."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(name, str(value), incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)


def describe_group_configs(bootstrap: str, group: str) -> dict[str, ConfigEntry]:
    """Every config of the group, by name."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group)
    return dict(admin.describe_configs([resource])[resource].result(timeout=15))
