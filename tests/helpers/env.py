"""Environment checks: in CI a missing tool or client is a failure, elsewhere a skip."""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    """Fail under CI=true, skip elsewhere."""
    if in_ci():
        pytest.fail(f"required test dependency missing (CI=true): {reason}", pytrace=False)
    pytest.skip(reason)


def require_executable(name: str, hint: str = "") -> str:
    path = shutil.which(name)
    if path is None:
        missing(f"executable {name!r} not found on PATH{'; ' + hint if hint else ''}")
    return path


def require_module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        missing(f"Python module {name!r} is not installed (pip install -e '.[test]')")


def soak_scale(default_full: int, default_ci: int) -> int:
    """Size for soak-style tests: ODRADEK_SOAK overrides, CI gets the short version."""
    value = os.environ.get("ODRADEK_SOAK")
    if value:
        return int(value)
    return default_ci if in_ci() else default_full
