"""mypy over the code under the names it is imported by. The top-level folders are
odradek.broker, odradek.coordinator, ... (setup.py maps them in), which mypy cannot
tell from the folders, so each of their files is given to it under its installed name.

    python typecheck.py PATH...     (make lint: the product, bench/ and the typed tests)
"""

from __future__ import annotations

import sys
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

from setup import FOLDERS


def installed_name(source: BuildSource) -> str:
    if source.path is None:
        return source.module
    parts = Path(source.path).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    for name, folder in FOLDERS.items():
        if parts[:1] == (folder,):
            return ".".join(("odradek", name, *parts[1:]))
    return source.module


def main(argv: list[str]) -> int:
    sources, options = process_options(argv)
    renamed = [
        BuildSource(s.path, installed_name(s), s.text, s.base_dir, s.followed) for s in sources
    ]
    try:
        result = build.build(renamed, options)
    except CompileError as error:
        print("\n".join(error.messages))
        return 2
    print("\n".join(result.errors))
    files = len(renamed)
    if result.errors:
        print(f"Found {len(result.errors)} errors in {files} source files")
        return 1
    print(f"Success: no issues found in {files} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
