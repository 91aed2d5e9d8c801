"""The KafkaJS scenarios of tests/js/scenarios.js, on the KafkaJS that `make
install-test` installs into tests/js/node_modules (npm ci)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.client_programs import run_json
from helpers.env import missing, require_executable

JS_DIR = Path(__file__).resolve().parents[1] / "js"
SCRIPT = JS_DIR / "scenarios.js"
KAFKAJS_VERSION = "2.2.4"


def node() -> str:
    """The node executable, with KafkaJS installed; skips (fails under CI=true) when
    either is missing."""
    path = require_executable("node", "install Node.js 18 or later")
    package = JS_DIR / "node_modules" / "kafkajs" / "package.json"
    if not package.is_file():
        missing(f"KafkaJS is not in {package.parent} (run `make install-test`: npm ci)")
    version = json.loads(package.read_text())["version"]
    if version != KAFKAJS_VERSION:
        raise AssertionError(f"KafkaJS {version} is installed, {KAFKAJS_VERSION} expected")
    return path


def run(
    scenario: str, bootstrap: str, topic: str, group: str, timeout: float = 150
) -> dict[str, Any]:
    """Run one scenario (produce-consume, group, transact) to its result."""
    return run_json([node(), str(SCRIPT), scenario, bootstrap, topic, group], timeout=timeout)
