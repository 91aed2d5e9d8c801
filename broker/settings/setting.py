"""A broker setting's declaration: its Kafka name, its type as DescribeConfigs gives it,
its default, its checks and what it does in Odradek (the documentation DescribeConfigs
answers with), carried by the BrokerConfig field that holds its value
(`num_partitions: int = setting("num.partitions", INT, 1, doc="...")`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

# DescribeConfigs config types
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, PASSWORD = 1, 2, 3, 4, 5, 6, 7, 9

T = TypeVar("T")
# A check takes the setting's Kafka name and its value, and gives the value to keep
Check = Callable[[str, Any], Any]


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it and says why."""


@dataclass(frozen=True)
class Setting:
    name: str
    config_type: int
    checks: tuple[Check, ...] = ()
    alias: str | None = None  # another Kafka name for the same setting (broker.id)
    doc: str = ""  # what the setting does in Odradek, in a sentence or two

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name,) if self.alias is None else (self.name, self.alias)

    def parse(self, raw: str) -> object:
        """The value of a setting as written; ValueError says why it does not parse."""
        raw = raw.strip()
        if self.config_type == BOOLEAN:
            if raw.lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return raw.lower() == "true"
        if self.config_type in (INT, SHORT, LONG):
            try:
                return int(raw)
            except ValueError:
                raise ValueError("expected a whole number") from None
        return raw


def setting(
    name: str, config_type: int, default: T, *checks: Check, doc: str, alias: str | None = None
) -> T:
    """A BrokerConfig field that Kafka's setting `name` sets; `doc` says what it does."""
    declared = Setting(name, config_type, checks, alias, doc)
    return field(default=default, metadata={"setting": declared})


def declared_setting(metadata: Mapping[Any, Any]) -> Setting | None:
    """The declaration a BrokerConfig field's metadata carries (None: not a setting)."""
    found = metadata.get("setting")
    return found if isinstance(found, Setting) else None


def at_least(low: int) -> Check:
    def check(name: str, value: int) -> int:
        if value < low:
            raise ConfigError(f"{name}: must be at least {low}")
        return value

    return check


def one_of(*choices: str) -> Check:
    """One of the words, in any case (kept in lower case)."""

    def check(name: str, value: str) -> str:
        value = value.lower()
        if value not in choices:
            raise ConfigError(f"{name}={value!r}: not one of {', '.join(choices)}")
        return value

    return check


def log_directories(name: str, value: str) -> str:
    """One directory or several, separated by commas; kept as "a,b" (blanks dropped)."""
    paths = [path.strip() for path in value.split(",") if path.strip()]
    if not paths:
        raise ConfigError(f"{name} names no directory")
    if len({os.path.abspath(path) for path in paths}) < len(paths):
        raise ConfigError(f"{name} names a directory twice: {value}")
    return ",".join(paths)


def none_if_empty(_name: str, value: str | None) -> str | None:
    return value or None


def streams_list(value: str) -> list[str]:
    """A LIST setting's items as Kafka splits them (blank: none)."""
    trimmed = value.strip()
    return re.split(r"\s*,\s*", trimmed) if trimmed else []


def distinct_tags(name: str, value: str) -> str:
    tags = streams_list(value)
    if len(set(tags)) != len(tags):
        raise ConfigError(f"{name} must not contain duplicate tag keys.")
    return value


# Kafka 4.4's built-in streams task assignors (custom ones are Java classes)
STREAMS_ASSIGNORS = ("sticky",)


def streams_assignors(name: str, value: str) -> str:
    assignors = streams_list(value)
    unknown = [assignor for assignor in assignors if assignor not in STREAMS_ASSIGNORS]
    if not assignors or unknown or len(set(assignors)) != len(assignors):
        raise ConfigError(
            f"{name}={value!r}: a list of distinct built-in assignors "
            f"({', '.join(STREAMS_ASSIGNORS)})"
        )
    return value
