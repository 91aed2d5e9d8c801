"""The packages import only downwards: protocol at the bottom, then storage and
coordinator, then broker on top (type-checking imports included). Everything is
imported under the one installed name, odradek: never by a folder's own name, which a
user's project may use for a package of its own."""

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
FOLDERS = ("protocol", "storage", "coordinator", "broker", "odradek_spark")


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _imported_packages(path: Path) -> set[str]:
    """The odradek packages a file imports: odradek.storage.log -> storage."""
    return {
        module.split(".")[1]
        for module in _imported_modules(path)
        if module.startswith("odradek.") and module.count(".") >= 1
    }


def test_nothing_is_imported_by_a_folders_own_name() -> None:
    code = [
        path for folder in (*FOLDERS, "tests", "bench") for path in (ROOT / folder).rglob("*.py")
    ]
    code += (ROOT / "odradek").glob("*.py")
    wrong = {
        str(path.relative_to(ROOT)): sorted(
            m for m in _imported_modules(path) if m.split(".")[0] in FOLDERS
        )
        for path in code
    }
    assert not {name: found for name, found in wrong.items() if found}


@pytest.mark.parametrize("package", sorted(MAY_NOT_IMPORT))
def test_package_imports_only_lower_layers(package: str) -> None:
    wrong = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & MAY_NOT_IMPORT[package])
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert not {name: found for name, found in wrong.items() if found}


def _broker_part(path: Path) -> str:
    """broker/cluster/member.py -> cluster; broker/server.py -> server."""
    parts = path.relative_to(ROOT / "broker").parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def test_broker_sub_packages_import_each_other_without_a_loop() -> None:
    """Each of broker/'s parts (sub-packages and top-level modules) imports only parts
    below it: the graph of their imports has no cycle."""
    uses: dict[str, set[str]] = {}
    for path in (ROOT / "broker").rglob("*.py"):
        part = _broker_part(path)
        for module in _imported_modules(path):
            names = module.split(".")
            if names[:2] == ["odradek", "broker"] and len(names) > 2 and names[2] != part:
                uses.setdefault(part, set()).add(names[2])
    visiting: list[str] = []
    done: set[str] = set()

    def visit(part: str) -> None:
        if part in done:
            return
        assert part not in visiting, f"import loop: {' -> '.join([*visiting, part])}"
        visiting.append(part)
        for used in sorted(uses.get(part, ())):
            visit(used)
        visiting.pop()
        done.add(part)

    for part in sorted(uses):
        visit(part)
