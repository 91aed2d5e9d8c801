"""The packages import only downwards: protocol at the bottom, then storage and
coordinator, then broker on top (type-checking imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAY_NOT_IMPORT = {
    "protocol": {"storage", "coordinator", "broker"},
    "storage": {"coordinator", "broker"},
    "coordinator": {"broker"},
}


def _imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(MAY_NOT_IMPORT))
def test_package_imports_only_lower_layers(package: str) -> None:
    wrong = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & MAY_NOT_IMPORT[package])
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert not {name: found for name, found in wrong.items() if found}
