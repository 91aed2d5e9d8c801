"""One module per Kafka API. Each opens with the versions it serves and its rules."""

from __future__ import annotations

from types import ModuleType

from broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
from broker.handlers.base import Api

_MODULES: dict[int, ModuleType] = {
    0: produce,
    1: fetch,
    2: list_offsets,
    3: metadata,
    8: offset_commit,
    9: offset_fetch,
    10: find_coordinator,
    11: join_group,
    12: heartbeat,
    13: leave_group,
    14: sync_group,
    15: describe_groups,
    16: list_groups,
    18: api_versions,
    19: create_topics,
    20: delete_topics,
    21: delete_records,
    22: init_producer_id,
    23: offset_for_leader_epoch,
    24: add_partitions_to_txn,
    25: add_offsets_to_txn,
    26: end_txn,
    27: write_txn_markers,
    28: txn_offset_commit,
    32: describe_configs,
    33: alter_configs,
    35: describe_log_dirs,
    37: create_partitions,
    42: delete_groups,
    44: incremental_alter_configs,
    47: offset_delete,
    60: describe_cluster,
    61: describe_producers,
    65: describe_transactions,
    66: list_transactions,
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
