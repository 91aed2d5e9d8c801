"""ACLs, SCRAM credentials, client quotas, finalized feature levels and delegation
tokens as the controller keeps them for a cluster: whole documents in the metadata
log (coordinator/cluster/shard.py: put_document), changed by operations that read the
current document and write the new one in one step, so that changes arriving from
several brokers never overwrite each other. Every broker's own stores follow them
(adopt). They offer the methods the handlers use on a broker's stores, so that
CreateAcls, DeleteAcls, AlterUserScramCredentials, AlterClientQuotas, UpdateFeatures
and the delegation token requests run the same code on the controller listener."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odradek.broker.security import acls, credentials, delegation_tokens
from odradek.broker.security.scram import ScramCredential
from odradek.broker.settings import client_quotas, named_configs
from odradek.broker.settings.features import INITIAL as INITIAL_FEATURES
from odradek.broker.settings.features import FinalizedFeatures
from odradek.coordinator.runtime import Result

if TYPE_CHECKING:
    from odradek.broker.cluster.controller import Controller

ACLS, SCRAM, QUOTAS, FEATURES = "acls", "scram", "client-quotas", "features"
TOKENS = "delegation-tokens"
GROUP_CONFIGS, CLIENT_METRICS = "group-configs", "client-metrics"


class ControllerAcls:
    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    @property
    def bindings(self) -> frozenset[acls.AclBinding]:
        return acls.decode_document(self._controller.shard.documents.get(ACLS))

    async def create(self, new: Iterable[acls.AclBinding]) -> None:
        await self._controller.run(partial(_create, new=frozenset(new)))

    async def delete(self, filters: Sequence[acls.AclFilter]) -> list[list[acls.AclBinding]]:
        matched: list[list[acls.AclBinding]] = await self._controller.run(
            partial(_delete, filters=list(filters))
        )
        return matched


class ControllerCredentials:
    path = Path("__cluster_metadata")  # where a failed write would be (the log)

    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    def users(self) -> credentials.Users:
        return credentials.decode_document(self._controller.shard.documents.get(SCRAM))

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users().get(user, {}).get(mechanism)

    async def change(
        self,
        upserts: Iterable[tuple[str, str, ScramCredential]],
        deletes: Iterable[tuple[str, str]],
    ) -> None:
        await self._controller.run(partial(_change, upserts=list(upserts), deletes=list(deletes)))


class ControllerFeatures:
    path = Path("__cluster_metadata")  # where a failed write would be (the log)

    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    @property
    def finalized(self) -> FinalizedFeatures:
        return FinalizedFeatures.decode(self._controller.shard.documents.get(FEATURES))

    async def change(self, levels: Mapping[str, int]) -> None:
        await self._controller.run(partial(_finalize, levels=dict(levels)))


class ControllerTokens:
    """The cluster's delegation tokens, as the token handlers use a broker's TokenStore."""

    path = Path("__cluster_metadata")

    def __init__(self, controller: Controller, secret_key: str | None) -> None:
        self._controller = controller
        self.secret_key = secret_key

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    def tokens(self) -> delegation_tokens.Tokens:
        return delegation_tokens.decode_document(self._controller.shard.documents.get(TOKENS))

    def by_hmac(self, hmac: bytes) -> delegation_tokens.Token | None:
        key = self.secret_key
        found = (
            t
            for t in self.tokens().values()
            if key is not None and delegation_tokens.token_hmac(key, t.token_id) == hmac
        )
        return next(found, None)

    async def change(
        self, upserts: Iterable[delegation_tokens.Token], deletes: Iterable[str]
    ) -> None:
        await self._controller.run(
            partial(_change_tokens, upserts=list(upserts), deletes=list(deletes))
        )


def _change_tokens(shard: Any, upserts: list[delegation_tokens.Token], deletes: list[str]) -> Any:
    tokens = delegation_tokens.decode_document(shard.documents.get(TOKENS))
    changed = delegation_tokens.changed(tokens, upserts, deletes)
    return shard.put_document(TOKENS, delegation_tokens.encode_document(changed), None)


def _finalize(shard: Any, levels: dict[str, int]) -> Any:
    current = FinalizedFeatures.decode(shard.documents.get(FEATURES))
    new = FinalizedFeatures(levels, current.epoch + 1)
    return shard.put_document(FEATURES, new.encode(), None)


def bootstrap_features(shard: Any) -> Any:
    """The finalized features of a new cluster, written once."""
    if FEATURES in shard.documents:
        return Result([], None)
    return shard.put_document(FEATURES, INITIAL_FEATURES.encode(), None)


def _create(shard: Any, new: frozenset[acls.AclBinding]) -> Any:
    current = acls.decode_document(shard.documents.get(ACLS))
    return shard.put_document(ACLS, acls.encode_document(current | new), None)


def _delete(shard: Any, filters: list[acls.AclFilter]) -> Any:
    current = acls.decode_document(shard.documents.get(ACLS))
    matched = [acls.matching(current, f) for f in filters]
    gone = {binding for found in matched for binding in found}
    return shard.put_document(ACLS, acls.encode_document(current - gone), matched)


def _change(
    shard: Any,
    upserts: list[tuple[str, str, ScramCredential]],
    deletes: list[tuple[str, str]],
) -> Any:
    users = credentials.decode_document(shard.documents.get(SCRAM))
    changed = credentials.changed(users, upserts, deletes)
    return shard.put_document(SCRAM, credentials.encode_document(changed), None)


class ControllerQuotas:
    path = Path("__cluster_metadata")

    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    def quotas(self) -> client_quotas.Quotas:
        return client_quotas.decode_document(self._controller.shard.documents.get(QUOTAS))

    async def alter(
        self,
        alterations: Sequence[client_quotas.Alteration],
        validate_only: bool,
        unresolvable: frozenset[str],
    ) -> list[tuple[client_quotas.Entity, client_quotas.Problem | None]]:
        outcome: list[tuple[client_quotas.Entity, client_quotas.Problem | None]]
        outcome = await self._controller.run(
            partial(
                _alter_quotas,
                alterations=list(alterations),
                validate_only=validate_only,
                unresolvable=unresolvable,
            )
        )
        return outcome


def _alter_quotas(
    shard: Any,
    alterations: list[client_quotas.Alteration],
    validate_only: bool,
    unresolvable: frozenset[str],
) -> Any:
    current = client_quotas.decode_document(shard.documents.get(QUOTAS))
    outcome, after = client_quotas.plan_alterations(current, alterations, unresolvable)
    if validate_only or after == current:
        return Result([], outcome)
    return shard.put_document(QUOTAS, client_quotas.encode_document(after), outcome)


def set_named_configs(shard: Any, document: str, name: str, configs: dict[str, str]) -> Any:
    """One group's (or client-metrics subscription's) configs replaced in the cluster's
    document of them all."""
    after = named_configs.with_configs(shard.documents.get(document), name, configs)
    return shard.put_document(document, after, {"error_code": 0})
