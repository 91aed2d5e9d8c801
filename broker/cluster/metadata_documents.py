"""The cluster state that brokers keep as whole documents (ACLs, SCRAM credentials,
client quotas, finalized features, delegation tokens, group and client-metrics
configs, replication throttles), written to `__cluster_metadata` as the records Kafka's
controller writes for the same state, and read back from them.

A change to a document is written as the records of its difference (an ACL added, a
credential removed, a config set); replaying a record rebuilds the document, so the
brokers' stores adopt the same bytes as before and Kafka's tools read the log.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from odradek.broker.cluster import throttles
from odradek.broker.cluster.controller_documents import (
    ACLS,
    CLIENT_METRICS,
    FEATURES,
    GROUP_CONFIGS,
    QUOTAS,
    SCRAM,
    TOKENS,
)
from odradek.broker.security import acls, credentials, delegation_tokens
from odradek.broker.security.resources import Operation, PatternType, Permission, ResourceType
from odradek.broker.security.scram import BY_TYPE_CODE, MECHANISMS, ScramCredential
from odradek.broker.settings import client_quotas
from odradek.broker.settings.features import METADATA_VERSION, FinalizedFeatures
from odradek.broker.settings.named_configs import with_configs
from odradek.coordinator.cluster import kafka_format as kf
from odradek.coordinator.cluster.kafka_format import MetadataRecord
from odradek.coordinator.cluster.records import BROKER_RESOURCE, config_records

# ConfigRecord's resource types beside TOPIC and BROKER (Kafka's ConfigResource.Type)
CLIENT_METRICS_RESOURCE, GROUP_RESOURCE = 16, 32
NAMED_CONFIGS = {GROUP_CONFIGS: GROUP_RESOURCE, CLIENT_METRICS: CLIENT_METRICS_RESOURCE}
_ACL_IDS = uuid.UUID("6f64726164656b2d61636c2d69647300")  # namespace of the ACL ids written


def acl_id(binding: acls.AclBinding) -> uuid.UUID:
    """The id an ACL's records carry: the same for the same binding, on every node."""
    parts = (
        binding.resource_type,
        binding.name,
        binding.pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission,
    )
    return uuid.uuid5(_ACL_IDS, repr(tuple(int(p) if isinstance(p, int) else p for p in parts)))


class MetadataDocuments:
    """The documents of one view of the cluster (the controller's, or a broker's)."""

    def __init__(self) -> None:
        self.documents: dict[str, bytes] = {}
        self._acls_by_id: dict[uuid.UUID, acls.AclBinding] = {}

    # -- writing ------------------------------------------------------------------------

    def records(self, name: str, before: bytes | None, after: bytes) -> list[MetadataRecord]:
        if name == ACLS:
            return _acl_records(acls.decode_document(before), acls.decode_document(after))
        if name == SCRAM:
            old, new = credentials.decode_document(before), credentials.decode_document(after)
            return _scram_records(old, new)
        if name == QUOTAS:
            old_q, new_q = (
                client_quotas.decode_document(before),
                client_quotas.decode_document(after),
            )
            return _quota_records(old_q, new_q)
        if name == FEATURES:
            old_levels = {} if before is None else dict(FinalizedFeatures.decode(before).levels)
            return _feature_records(old_levels, dict(FinalizedFeatures.decode(after).levels))
        if name == TOKENS:
            old_t = delegation_tokens.decode_document(before)
            return _token_records(old_t, delegation_tokens.decode_document(after))
        if name in NAMED_CONFIGS:
            old_c, new_c = _named(before), _named(after)
            return _config_records(NAMED_CONFIGS[name], old_c, new_c)
        if name == throttles.DOCUMENT:
            old_r, new_r = throttles.decode_document(before), throttles.decode_document(after)
            return _config_records(BROKER_RESOURCE, _by_name(old_r), _by_name(new_r))
        raise ValueError(f"no records for a document named {name!r}")

    # -- replaying ----------------------------------------------------------------------

    def replay(self, record: MetadataRecord, offset: int) -> None:
        replay = _REPLAY.get(record.api_key)
        if replay is not None:
            replay(self, record, offset)

    def _change(self, name: str, document: bytes) -> None:
        self.documents[name] = document

    def _acl(self, record: MetadataRecord, offset: int) -> None:
        current = acls.decode_document(self.documents.get(ACLS))
        if record.api_key == kf.ACCESS_CONTROL_ENTRY.api_key:
            binding = acls.AclBinding(
                ResourceType(record["resource_type"]),
                record["resource_name"],
                PatternType(record["pattern_type"]),
                record["principal"],
                record["host"],
                Operation(record["operation"]),
                Permission(record["permission_type"]),
            )
            self._acls_by_id[record["id"]] = binding
            after = current | {binding}
        else:
            gone = self._acls_by_id.pop(record["id"], None)
            if gone is None:
                gone = next((b for b in current if acl_id(b) == record["id"]), None)
            after = current - {gone} if gone is not None else current
        self._change(ACLS, acls.encode_document(after))

    def _scram(self, record: MetadataRecord, offset: int) -> None:
        users = credentials.decode_document(self.documents.get(SCRAM))
        mechanism = BY_TYPE_CODE.get(record["mechanism"])
        if mechanism is None:
            return
        name = record["name"]
        if record.api_key == kf.USER_SCRAM_CREDENTIAL.api_key:
            credential = ScramCredential(
                record["salt"], record["stored_key"], record["server_key"], record["iterations"]
            )
            users = credentials.changed(users, [(name, mechanism.name, credential)], [])
        else:
            users = credentials.changed(users, [], [(name, mechanism.name)])
        self._change(SCRAM, credentials.encode_document(users))

    def _quota(self, record: MetadataRecord, offset: int) -> None:
        quotas = client_quotas.decode_document(self.documents.get(QUOTAS))
        entity: client_quotas.Entity = tuple(
            (e["entity_type"], e["entity_name"]) for e in record["entity"]
        )
        values = dict(quotas.get(entity, {}))
        if record["remove"]:
            values.pop(record["key"], None)
        else:
            values[record["key"]] = record["value"]
        if values:
            quotas[entity] = values
        else:
            quotas.pop(entity, None)
        self._change(QUOTAS, client_quotas.encode_document(quotas))

    def _feature(self, record: MetadataRecord, offset: int) -> None:
        current = FinalizedFeatures.decode(self.documents.get(FEATURES))
        levels = {**current.levels, record["name"]: record["feature_level"]}
        self._change(FEATURES, FinalizedFeatures(levels, max(offset, 1)).encode())

    def _token(self, record: MetadataRecord, offset: int) -> None:
        tokens = delegation_tokens.decode_document(self.documents.get(TOKENS))
        if record.api_key == kf.DELEGATION_TOKEN.api_key:
            token = delegation_tokens.Token(
                token_id=record["token_id"],
                owner=record["owner"],
                requester=record["requester"],
                renewers=tuple(record["renewers"]),
                issue_ms=record["issue_timestamp"],
                expiry_ms=record["expiration_timestamp"],
                max_ms=record["max_timestamp"],
            )
            tokens[token.token_id] = token
        else:
            tokens.pop(record["token_id"], None)
        self._change(TOKENS, delegation_tokens.encode_document(tokens))

    def _config(self, record: MetadataRecord, offset: int) -> None:
        resource_type, resource = record["resource_type"], record["resource_name"]
        name, value = record["name"], record["value"]
        if resource_type == BROKER_RESOURCE:
            if name not in throttles.RATES or not resource.isdigit():
                return  # a broker setting Odradek's brokers do not change at run time
            rates = throttles.decode_document(self.documents.get(throttles.DOCUMENT))
            _set(rates.setdefault(int(resource), {}), name, value)
            rates = {node: r for node, r in rates.items() if r}
            self._change(throttles.DOCUMENT, throttles.encode_document(rates))
            return
        document = next((d for d, t in NAMED_CONFIGS.items() if t == resource_type), None)
        if document is None:
            return
        every = _named(self.documents.get(document))
        _set(every.setdefault(resource, {}), name, value)
        configs = every[resource]
        self._change(document, _named_document(document, resource, configs, self.documents))


def _set(configs: dict[str, str], name: str, value: str | None) -> None:
    if value is None:
        configs.pop(name, None)
    else:
        configs[name] = value


def _named(document: bytes | None) -> dict[str, dict[str, str]]:
    return {k: dict(v) for k, v in json.loads(document).items()} if document else {}


def _named_document(
    document: str, resource: str, configs: dict[str, str], documents: dict[str, bytes]
) -> bytes:
    return with_configs(documents.get(document), resource, configs)


def _by_name(rates: throttles.Rates) -> dict[str, dict[str, str]]:
    return {str(node): dict(r) for node, r in rates.items()}


# -- the records of a difference ------------------------------------------------------


def _acl_records(
    before: frozenset[acls.AclBinding], after: frozenset[acls.AclBinding]
) -> list[MetadataRecord]:
    removed = [
        kf.record(kf.REMOVE_ACCESS_CONTROL_ENTRY, id=acl_id(b))
        for b in sorted(before - after, key=acls.sort_key)
    ]
    added = [
        kf.record(
            kf.ACCESS_CONTROL_ENTRY,
            id=acl_id(b),
            resource_type=int(b.resource_type),
            resource_name=b.name,
            pattern_type=int(b.pattern_type),
            principal=b.principal,
            host=b.host,
            operation=int(b.operation),
            permission_type=int(b.permission),
        )
        for b in sorted(after - before, key=acls.sort_key)
    ]
    return removed + added


def _scram_records(before: credentials.Users, after: credentials.Users) -> list[MetadataRecord]:
    records = []
    for user in sorted(set(before) | set(after)):
        old, new = before.get(user, {}), after.get(user, {})
        for name in sorted(set(old) | set(new)):
            code = MECHANISMS[name].type_code
            if name not in new:
                records.append(
                    kf.record(kf.REMOVE_USER_SCRAM_CREDENTIAL, name=user, mechanism=code)
                )
            elif old.get(name) != new[name]:
                c = new[name]
                records.append(
                    kf.record(
                        kf.USER_SCRAM_CREDENTIAL,
                        name=user,
                        mechanism=code,
                        salt=c.salt,
                        stored_key=c.stored_key,
                        server_key=c.server_key,
                        iterations=c.iterations,
                    )
                )
    return records


def _quota_records(
    before: client_quotas.Quotas, after: client_quotas.Quotas
) -> list[MetadataRecord]:
    records = []
    for entity in sorted(set(before) | set(after), key=repr):
        old, new = before.get(entity, {}), after.get(entity, {})
        parts = [{"entity_type": kind, "entity_name": name} for kind, name in entity]
        for key in sorted(set(old) | set(new)):
            if key not in new:
                records.append(
                    kf.record(kf.CLIENT_QUOTA, entity=parts, key=key, value=0.0, remove=True)
                )
            elif old.get(key) != new[key]:
                records.append(
                    kf.record(kf.CLIENT_QUOTA, entity=parts, key=key, value=new[key], remove=False)
                )
    return records


def _feature_records(before: dict[str, int], after: dict[str, int]) -> list[MetadataRecord]:
    return [
        kf.record(kf.FEATURE_LEVEL, name=name, feature_level=after.get(name, 0))
        # metadata.version first, as Kafka's bootstrap writes it
        for name in sorted(set(before) | set(after), key=lambda n: (n != METADATA_VERSION, n))
        if before.get(name, 0) != after.get(name, 0)
    ]


def _token_records(
    before: delegation_tokens.Tokens, after: delegation_tokens.Tokens
) -> list[MetadataRecord]:
    records = [
        kf.record(kf.REMOVE_DELEGATION_TOKEN, token_id=token_id)
        for token_id in sorted(set(before) - set(after))
    ]
    for token_id in sorted(after):
        t = after[token_id]
        if before.get(token_id) != t:
            records.append(
                kf.record(
                    kf.DELEGATION_TOKEN,
                    owner=t.owner,
                    requester=t.requester,
                    renewers=list(t.renewers),
                    issue_timestamp=t.issue_ms,
                    max_timestamp=t.max_ms,
                    expiration_timestamp=t.expiry_ms,
                    token_id=t.token_id,
                )
            )
    return records


def _config_records(
    resource_type: int,
    before: dict[str, dict[str, str]],
    after: dict[str, dict[str, str]],
) -> list[MetadataRecord]:
    return [
        change
        for resource in sorted(set(before) | set(after))
        for change in config_records(
            resource_type, resource, before.get(resource, {}), after.get(resource, {})
        )
    ]


_REPLAY: dict[int, Callable[[MetadataDocuments, MetadataRecord, int], None]] = {
    kf.ACCESS_CONTROL_ENTRY.api_key: MetadataDocuments._acl,
    kf.REMOVE_ACCESS_CONTROL_ENTRY.api_key: MetadataDocuments._acl,
    kf.USER_SCRAM_CREDENTIAL.api_key: MetadataDocuments._scram,
    kf.REMOVE_USER_SCRAM_CREDENTIAL.api_key: MetadataDocuments._scram,
    kf.CLIENT_QUOTA.api_key: MetadataDocuments._quota,
    kf.FEATURE_LEVEL.api_key: MetadataDocuments._feature,
    kf.DELEGATION_TOKEN.api_key: MetadataDocuments._token,
    kf.REMOVE_DELEGATION_TOKEN.api_key: MetadataDocuments._token,
    kf.CONFIG.api_key: MetadataDocuments._config,
}
