"""Comparing decoded requests with kio's objects."""

from __future__ import annotations

import dataclasses
from typing import Any


def plain(value: Any) -> Any:
    """Field values in order, nested: a kio object and a decoded request (named tuples)
    with the same fields compare equal."""
    if dataclasses.is_dataclass(value):
        return tuple(plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple):
        return tuple(plain(item) for item in value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value
