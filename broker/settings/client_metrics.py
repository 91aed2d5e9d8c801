"""Client-metrics subscriptions (KIP-714): CLIENT_METRICS config resources, each a name
with up to three configs, as Kafka 4.4 has them:

- `metrics`: a list of metric-name prefixes the matching clients push ("*" for all;
  empty for none),
- `interval.ms`: how often they push (100 to 3600000, default 300000),
- `match`: a list of `<selector>=<regular expression>` a client must all match (its
  client_instance_id, client_id, client_software_name, client_software_version,
  client_source_address, client_source_port); empty matches every client.

They are kept in `client-metrics.json` in the data directory, written whole on every
change (as group configs are), so they survive a restart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from odradek.broker.settings.named_configs import NamedConfigs
from odradek.broker.settings.setting import streams_list
from odradek.protocol.errors import ErrorCode

FILE_NAME = "client-metrics.json"
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
TYPES = {METRICS: "list", INTERVAL_MS: "int", MATCH: "list"}
DEFAULTS = {METRICS: "", INTERVAL_MS: "300000", MATCH: ""}
# what each does (DescribeConfigs' documentation)
DOCS = {
    METRICS: (
        "The metric-name prefixes the subscription's clients are asked to push: * for "
        "every metric, empty for none."
    ),
    INTERVAL_MS: "How often, in milliseconds, the subscription's clients push their metrics.",
    MATCH: (
        "Which clients the subscription is for: selector=regular expression pairs "
        "(client_id, client_software_name, client_source_address, ...) that must all match; "
        "empty matches every client."
    ),
}
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3600000
SELECTORS = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def list_value(value: str) -> str:
    """A list config as Kafka reads it back: items trimmed, each once."""
    return ",".join(dict.fromkeys(streams_list(value)))


class ClientMetricsFileError(RuntimeError):
    """The subscriptions file exists but cannot be read; the message names it."""


class ClientMetricsError(ValueError):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_match(patterns: list[str]) -> dict[str, re.Pattern[str]]:
    """selector -> expression; the last one given for a selector wins."""
    parsed = {}
    for pattern in patterns:
        parts = pattern.split("=")
        selector = parts[0].strip() if len(parts) == 2 else ""
        if selector not in SELECTORS:
            raise ClientMetricsError(
                ErrorCode.invalid_config, f"Illegal client matching pattern: {pattern}"
            )
        try:
            parsed[selector] = re.compile(parts[1].strip())
        except re.error:
            raise ClientMetricsError(
                ErrorCode.invalid_config, f"Illegal client matching pattern: {pattern}"
            ) from None
    return parsed


def validate(name: str, configs: Mapping[str, str]) -> None:
    """A subscription's whole set of configs, checked as Kafka 4.4 checks them."""
    if not name:
        raise ClientMetricsError(ErrorCode.invalid_request, "Subscription name can't be empty")
    for key in configs:
        if key not in TYPES:
            raise ClientMetricsError(
                ErrorCode.invalid_request, f"Unknown client metrics configuration: {key}"
            )
    if INTERVAL_MS in configs:
        raw = configs[INTERVAL_MS]
        try:
            interval = int(raw.strip())
        except ValueError:
            interval = None
        if interval is None or not INT_MIN <= interval <= INT_MAX:
            raise ClientMetricsError(
                ErrorCode.invalid_config,
                f"Invalid value {raw} for configuration {INTERVAL_MS}: Not a number of type INT",
            )
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise ClientMetricsError(
                ErrorCode.invalid_request,
                f"Invalid value {interval} for {INTERVAL_MS}, interval must be between 100 "
                "and 3600000 (1 hour)",
            )
    if MATCH in configs:
        parse_match(streams_list(configs[MATCH]))


@dataclass(frozen=True)
class Subscription:
    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: dict[str, re.Pattern[str]]

    def matches(self, client: Mapping[str, str]) -> bool:
        return all(
            pattern.fullmatch(client.get(selector, "")) is not None
            for selector, pattern in self.match.items()
        )


class ClientMetricsStore(NamedConfigs):
    def __init__(self, data_dir: Path) -> None:
        super().__init__(
            data_dir / FILE_NAME, "client metrics subscriptions", ClientMetricsFileError
        )
        self.version = 0  # moves on every change (the telemetry subscriptions' ids follow)

    def names(self) -> list[str]:
        return sorted(self.configs)

    def replace(self, name: str, configs: Mapping[str, str]) -> None:
        """Set the subscription's configs to exactly `configs` (validated before); none
        left removes it. Raises OSError (nothing changed) if the file cannot be written."""
        super().replace(name, configs)
        self.version += 1

    def subscriptions(self) -> list[Subscription]:
        found = []
        for name, configs in sorted(self.configs.items()):
            found.append(
                Subscription(
                    name=name,
                    metrics=tuple(streams_list(configs.get(METRICS, ""))),
                    interval_ms=int(configs.get(INTERVAL_MS, DEFAULTS[INTERVAL_MS])),
                    match=parse_match(streams_list(configs.get(MATCH, ""))),
                )
            )
        return found
