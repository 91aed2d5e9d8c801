"""Kafka's feature flags: the levels this broker supports and the ones the cluster has
finalized, as ApiVersions reports them and UpdateFeatures changes them (KIP-584,
KIP-1022).

A finalized level is what clients may rely on: the Java client runs transactions
version 2 when `transaction.version` is 2, for instance. A new cluster starts at each
feature's default, Kafka 4.4's. Levels at 0 are not finalized (not listed).

What a level changes in this broker:
- group.version 0: ConsumerGroupHeartbeat answers UNSUPPORTED_VERSION;
- share.version 0: ShareGroupHeartbeat does; streams.version 0: StreamsGroupHeartbeat does;
- transaction.version 2: the Java client runs transactions version 2 (KIP-890: Produce
  v12, TxnOffsetCommit v5 and EndTxn v5, which bumps the epoch at every end); the
  broker serves both versions whatever the level, by request version, as Kafka does;
- the others are recorded and reported only.

`plan_updates` checks an UpdateFeatures request against the levels in force, in
Kafka's order and words, and gives the levels after it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"
ELR_VERSION = "eligible.leader.replicas.version"

# UpdateFeatures' upgrade types (v1+; v0's allow_downgrade is SAFE_DOWNGRADE or UPGRADE)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_level: int
    max_level: int
    default: int  # the level a new cluster finalizes


# In the order Kafka 4.4 lists its supported features.
FEATURES: tuple[Feature, ...] = (
    Feature(GROUP_VERSION, 0, 1, 1),
    Feature(KRAFT_VERSION, 0, 1, 0),
    Feature(METADATA_VERSION, 7, 33, 33),
    Feature(SHARE_VERSION, 0, 2, 2),
    Feature(STREAMS_VERSION, 0, 1, 1),
    Feature(TRANSACTION_VERSION, 0, 2, 2),
    Feature(ELR_VERSION, 0, 1, 1),
)
BY_NAME = {feature.name: feature for feature in FEATURES}


def default_levels() -> dict[str, int]:
    return {feature.name: feature.default for feature in FEATURES}


@dataclass(frozen=True, slots=True)
class FinalizedFeatures:
    """The cluster's finalized levels and the epoch of their last change (clients keep
    the answer with the highest epoch)."""

    levels: Mapping[str, int]
    epoch: int

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def listed(self) -> list[tuple[str, int]]:
        """(name, level) of the features finalized above 0, as ApiVersions lists them."""
        return [(name, level) for name, level in self.levels.items() if level > 0]

    def encode(self) -> bytes:
        return json.dumps({"epoch": self.epoch, "levels": dict(self.levels)}).encode()

    @staticmethod
    def decode(document: bytes | None) -> FinalizedFeatures:
        if document is None:
            return INITIAL
        value = json.loads(document)
        return FinalizedFeatures(
            {str(k): int(v) for k, v in value["levels"].items()}, int(value["epoch"])
        )


INITIAL = FinalizedFeatures(default_levels(), 1)


@dataclass(frozen=True, slots=True)
class Update:
    name: str
    level: int
    upgrade_type: int


class FeatureUpdateError(Exception):
    """An update Kafka refuses: INVALID_UPDATE_VERSION with this message."""


def plan_updates(
    updates: Sequence[Update], current: Mapping[str, int], node_id: int
) -> dict[str, int]:
    """The levels after `updates`, or FeatureUpdateError for the first refused one."""
    new = dict(current)
    for update in updates:
        reason = _refusal(update, current.get(update.name, 0), node_id)
        if reason is not None:
            raise FeatureUpdateError(
                "The update failed for all features since the following feature had an "
                f"error: {reason}"
            )
        new[update.name] = update.level
    return new


def _refusal(update: Update, level_now: int, node_id: int) -> str | None:
    name, level = update.name, update.level
    invalid = f"Invalid update version {level} for feature {name}."
    if update.upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return f"{invalid} The controller does not support the given upgrade type."
    if level < 0:
        return f"{invalid} A feature version cannot be less than 0."
    feature = BY_NAME.get(name)
    if feature is None:
        if level == 0:
            return f"{invalid} Feature {name} not found."
        return f"{invalid} Local controller {node_id} does not support this feature."
    if not feature.min_level <= level <= feature.max_level:
        return (
            f"{invalid} Local controller {node_id} only supports versions "
            f"{feature.min_level}-{feature.max_level}"
        )
    if level >= level_now:
        return None
    if update.upgrade_type == UPGRADE:
        return (
            f"{invalid} Can't downgrade the version of this feature without setting the "
            "upgrade type to either safe or unsafe downgrade."
        )
    if name == KRAFT_VERSION:
        return f"{invalid} Can't downgrade the version of this feature."
    if name == METADATA_VERSION:
        why = (
            "Refusing to perform the requested downgrade because it might delete metadata "
            "information."
            if update.upgrade_type == SAFE_DOWNGRADE
            else "Unsafe metadata downgrade is not supported in this version."
        )
        return f"Unsupported metadata.version downgrade from {level_now} to {level}. {why}"
    return None
