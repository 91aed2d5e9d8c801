"""One module per Kafka API. Each opens with the versions it serves and its rules."""

from __future__ import annotations

from types import ModuleType

from broker.handlers import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    fetch,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    produce,
)
from broker.handlers.base import Api

_MODULES: dict[int, ModuleType] = {
    0: produce,
    1: fetch,
    2: list_offsets,
    3: metadata,
    18: api_versions,
    19: create_topics,
    20: delete_topics,
    21: delete_records,
    22: init_producer_id,
    23: offset_for_leader_epoch,
    32: describe_configs,
    33: alter_configs,
    35: describe_log_dirs,
    37: create_partitions,
    44: incremental_alter_configs,
    60: describe_cluster,
}

API_TABLE: dict[int, Api] = {
    key: Api(
        key=key,
        name=module.__name__.rsplit(".", 1)[1],
        min_version=module.MIN_VERSION,
        max_version=module.MAX_VERSION,
        handle=module.handle,
    )
    for key, module in sorted(_MODULES.items())
}
