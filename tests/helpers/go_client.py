"""The franz-go scenario program of tests/go (kgo and kadm), which `make install-test`
builds into tests/go/bin/kafkago."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.client_programs import run_json
from helpers.env import missing

GO_DIR = Path(__file__).resolve().parents[1] / "go"
BINARY = GO_DIR / "bin" / "kafkago"


def binary() -> Path:
    """The built program; skips (fails under CI=true) when it is missing, and fails
    when a source is newer than it."""
    if not BINARY.is_file():
        missing(f"{BINARY} is not built (run `make install-test`, which needs Go)")
    built = BINARY.stat().st_mtime
    stale = [p.name for p in (*GO_DIR.glob("*.go"), GO_DIR / "go.mod") if p.stat().st_mtime > built]
    if stale:
        raise AssertionError(f"{BINARY} is older than {', '.join(stale)}: run `make install-test`")
    return BINARY


def run(
    scenario: str, bootstrap: str, topic: str, group: str, *flags: str, timeout: float = 90
) -> dict[str, Any]:
    """Run one scenario (produce-consume, group-848, transact, admin) to its result."""
    cmd = [str(binary()), "-bootstrap", bootstrap, "-topic", topic, "-group", group]
    cmd += [*flags, "-timeout", f"{int(timeout) - 10}s", scenario]
    return run_json(cmd, timeout=timeout)
