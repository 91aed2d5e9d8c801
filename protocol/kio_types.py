"""What a kio message class's type hints say about a field: the message class it
holds (alone, in an array or nullable), whether it is an array or may be null,
and the default the class declares. Shared by the decoder, the encoder and
`messages.build`."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any


def entity_in(hint: Any) -> type | None:
    """The kio class in `X`, `X | None`, `tuple[X, ...]` or `tuple[X, ...] | None`."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        found = entity_in(arg) if typing.get_origin(arg) is tuple else arg
        if isinstance(found, type) and dataclasses.is_dataclass(found):
            return found
    return None


def is_array(hint: Any) -> bool:
    """Is `hint` a tuple (an array), or a tuple or None?"""
    return typing.get_origin(hint) is tuple or any(
        typing.get_origin(arg) is tuple for arg in typing.get_args(hint)
    )


def is_nullable(hint: Any) -> bool:
    return types.NoneType in typing.get_args(hint)


def declared_default(f: dataclasses.Field[Any], otherwise: Any) -> Any:
    """The field's default (or a fresh one from its factory), else `otherwise`."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return otherwise
