"""Topic set-up through librdkafka's AdminClient, for tests whose client has no admin API."""

from __future__ import annotations

from collections.abc import Mapping

from helpers.env import require_module

TIMEOUT = 15.0


def create_topic(
    bootstrap: str, topic: str, partitions: int = 1, configs: Mapping[str, object] | None = None
) -> None:
    require_module("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    cfg = {k: str(v) for k, v in (configs or {}).items()}
    fs = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=cfg)],
        operation_timeout=TIMEOUT,
    )
    fs[topic].result(timeout=TIMEOUT)
