"""Run a client scenario program that prints its result as one JSON line (the franz-go
program of tests/go, the KafkaJS script of tests/js), and run it on Apache Kafka 4.4
and Odradek side by side."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any


class ScenarioError(AssertionError):
    pass


def run_json(
    cmd: Sequence[str],
    *,
    timeout: float,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``cmd`` to completion and return the JSON object of its last stdout line;
    a non-zero exit, an ``error`` in the result or a time-out raises ScenarioError."""
    shown = " ".join(cmd)
    try:
        proc = subprocess.run(
            list(cmd),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise ScenarioError(f"{shown} timed out after {timeout} s\n{err[-4000:]}") from None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    try:
        result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError as exc:
        result = {"error": f"unparseable output ({exc})"}
    if proc.returncode != 0 or not lines or "error" in result:
        raise ScenarioError(
            f"{shown}\nexit status {proc.returncode}: {result.get('error', 'no result line')}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return result


def on_both(
    run: Callable[[str], dict[str, Any]], kafka: str, odradek: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``run(bootstrap)`` on Kafka 4.4 and on Odradek at the same time; returns both
    results, or fails naming the broker(s) on which the scenario failed: failing on
    Kafka too points at the client or the scenario, on Odradek alone at Odradek."""
    with ThreadPoolExecutor(2) as pool:
        futures = {"Kafka 4.4": pool.submit(run, kafka), "Odradek": pool.submit(run, odradek)}
        errors = {name: f.exception() for name, f in futures.items()}
    failed = {name: err for name, err in errors.items() if err is not None}
    if failed:
        where = " and ".join(failed)
        details = "\n\n".join(f"=== on {name}:\n{err}" for name, err in failed.items())
        raise ScenarioError(f"the scenario failed on {where}\n{details}")
    return futures["Kafka 4.4"].result(), futures["Odradek"].result()
