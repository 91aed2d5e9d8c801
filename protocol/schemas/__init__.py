"""Message classes kio 0.6.5 does not have, written in the form of its generated ones
(one folder per API, one per version, a request.py and a response.py): the KIP-1331
versions of the streams-group APIs, ApiVersions v5 (KIP-1242), DeleteGroups v3,
TxnOffsetCommit v6 and UnregisterController v0.
`messages.request_class` and `response_class` look here before asking kio, so the
decoder, the encoder and `build` use them unchanged."""

from __future__ import annotations

import importlib
import types

from kio.static.constants import EntityType

# (api key, version) -> the package of that version, beside this file
_PACKAGES = {
    (18, 5): "api_versions.v5",
    (42, 3): "delete_groups.v3",
    (28, 6): "txn_offset_commit.v6",
    (88, 1): "streams_group_heartbeat.v1",
    (89, 1): "streams_group_describe.v1",
    (93, 0): "streams_group_topology_description_update.v0",
    (94, 0): "unregister_controller.v0",
}


def payload_module(api_key: int, version: int, entity_type: EntityType) -> types.ModuleType | None:
    """The module of our own for this request or response, or None (kio has it, or
    nobody does)."""
    package = _PACKAGES.get((api_key, version))
    if package is None:
        return None
    part = "request" if entity_type == EntityType.request else "response"
    return importlib.import_module(f"{__name__}.{package}.{part}")
