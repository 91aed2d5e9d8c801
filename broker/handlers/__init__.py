"""One module per Kafka API. Each opens with the versions it serves and its rules."""

from __future__ import annotations

from types import ModuleType

from broker.handlers import (
    api_versions,
    create_topics,
    delete_topics,
    fetch,
    init_producer_id,
    list_offsets,
    metadata,
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
    22: init_producer_id,
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
