"""Compile and run tests/java/*.java (KafkaTool and its scenarios) against the Apache
Kafka Java client 4.4.

The client and what it needs (Jackson, SLF4J with its simple binding, logging warnings
to stderr) come from Maven Central: `make install-test` copies them into tests/java/lib
(tests/java/pom.xml). Classes are compiled on demand into ``tests/java/classes/<hash>/``,
keyed by the sources, the jar set and the javac version, so edits recompile and
repeated runs do not.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from helpers.env import missing, require_executable

JAVA_DIR = Path(__file__).resolve().parents[1] / "java"
LIB = JAVA_DIR / "lib"
CLASSES_ROOT = Path(os.environ.get("ODRADEK_JAVA_CLASSES", JAVA_DIR / "classes"))
MAIN_CLASS = "KafkaTool"
CLIENT_VERSION = "4.4.0"
DEFAULT_TIMEOUT = 60.0


class JavaToolError(AssertionError):
    pass


def sources() -> list[Path]:
    return sorted(JAVA_DIR.glob("*.java"))


def jars() -> list[Path]:
    """The jars of tests/java/lib, or none when the client is not installed."""
    if not (LIB / f"kafka-clients-{CLIENT_VERSION}.jar").is_file():
        return []
    return sorted(LIB.glob("*.jar"))


def _javac_version(javac: str) -> str:
    out = subprocess.run([javac, "-version"], capture_output=True, text=True, check=True)
    return (out.stdout + out.stderr).strip()


@lru_cache(maxsize=1)
def _build() -> tuple[str, str]:
    """Returns (java executable, classpath). Compiles if needed; fails/skips if impossible."""
    java = require_executable("java", "install a JDK 17")
    javac = require_executable("javac", "install a JDK 17")
    jar_files = jars()
    if not jar_files:
        missing(f"the Kafka Java client {CLIENT_VERSION} is not in {LIB} (run `make install-test`)")
    jar_cp = os.pathsep.join(str(j) for j in jar_files)
    source_files = sources()

    digest = hashlib.sha256()
    for source in source_files:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    digest.update(_javac_version(javac).encode())
    for j in jar_files:
        st = j.stat()
        digest.update(f"{j.name}:{st.st_size}".encode())
    out_dir = CLASSES_ROOT / digest.hexdigest()[:16]
    CLASSES_ROOT.mkdir(parents=True, exist_ok=True)
    if not (out_dir / f"{MAIN_CLASS}.class").is_file():
        with open(CLASSES_ROOT / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers compile once
            if not (out_dir / f"{MAIN_CLASS}.class").is_file():
                tmp = Path(tempfile.mkdtemp(prefix="build-", dir=CLASSES_ROOT))
                proc = subprocess.run(
                    [
                        javac,
                        "-nowarn",
                        "-encoding",
                        "UTF-8",
                        "-d",
                        str(tmp),
                        "-cp",
                        jar_cp,
                        *map(str, source_files),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=180,
                )
                if proc.returncode != 0:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise JavaToolError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
                if out_dir.exists():
                    shutil.rmtree(out_dir)
                tmp.rename(out_dir)
    return java, os.pathsep.join([str(out_dir), jar_cp])


def command(args: Sequence[str]) -> list[str]:
    java, classpath = _build()
    return [
        java,
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Xshare:auto",
        "-Dslf4j.internal.verbosity=ERROR",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.logFile=System.err",
        "-cp",
        classpath,
        MAIN_CLASS,
        *args,
    ]


def props_args(props: Mapping[str, object] | None) -> list[str]:
    out: list[str] = []
    for key, value in (props or {}).items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out += ["--prop", f"{key}={text}"]
    return out


# --------------------------------------------------------------------------- byte fields


def encode_bytes(data: bytes | str | None) -> Any:
    """Python value -> the tool's JSON form (null / UTF-8 text / {"b64": ...})."""
    if data is None:
        return None
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def decode_bytes(value: Any) -> bytes | None:
    """The tool's JSON form -> bytes (None stays None)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return base64.b64decode(value["b64"])
    return str(value).encode("utf-8")


def record_line(
    key: bytes | str | None = None,
    value: bytes | str | None = None,
    headers: Iterable[tuple[str, bytes | str | None]] = (),
    partition: int | None = None,
    timestamp: int | None = None,
    topic: str | None = None,
) -> dict[str, Any]:
    """One input record for ``produce(records=...)``."""
    rec: dict[str, Any] = {"key": encode_bytes(key), "value": encode_bytes(value)}
    rec["headers"] = [[k, encode_bytes(v)] for k, v in headers]
    if partition is not None:
        rec["partition"] = partition
    if timestamp is not None:
        rec["timestamp"] = timestamp
    if topic is not None:
        rec["topic"] = topic
    return rec


# --------------------------------------------------------------------------- results


@dataclass
class JavaResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def records(self) -> list[dict[str, Any]]:
        """Output lines that are records / results (no "event", no top-level "error")."""
        return [x for x in self.lines if "event" not in x and "error" not in x]

    @property
    def events(self) -> list[dict[str, Any]]:
        return [x for x in self.lines if "event" in x]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [x["error"] for x in self.lines if "error" in x]

    @property
    def error_type(self) -> str | None:
        """Simple class name of the first error, e.g. ``TopicExistsException``."""
        errs = self.errors
        return errs[0]["type"].rsplit(".", 1)[-1] if errs else None

    def describe(self) -> str:
        return (
            f"java KafkaTool {' '.join(self.args)}\nexit status {self.returncode}\n"
            f"--- stdout ---\n{self.stdout[-8000:]}\n--- stderr ---\n{self.stderr[-8000:]}"
        )

    def check(self) -> JavaResult:
        if self.returncode != 0 or self.errors:
            raise JavaToolError(f"Java client command failed:\n{self.describe()}")
        return self


def _parse_lines(stdout: str) -> list[dict[str, Any]]:
    lines = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


def run(
    args: Sequence[str],
    *,
    stdin: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> JavaResult:
    """Run one KafkaTool command to completion."""
    cmd = command(args)
    try:
        proc = subprocess.run(
            cmd,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise JavaToolError(
            f"java KafkaTool {' '.join(args)} timed out after {timeout}s\n"
            f"--- stdout ---\n{out[-8000:]}\n--- stderr ---\n{err[-8000:]}"
        ) from None
    result = JavaResult(list(args), proc.returncode, proc.stdout, proc.stderr)
    try:
        result.lines = _parse_lines(proc.stdout)
    except json.JSONDecodeError as exc:
        raise JavaToolError(f"unparseable tool output ({exc}):\n{result.describe()}") from None
    return result.check() if check else result


# --------------------------------------------------------------------------- convenience


def produce(
    bootstrap: str,
    topic: str,
    *,
    records: Iterable[Mapping[str, Any]] | None = None,
    count: int | None = None,
    acks: str = "all",
    compression: str | None = None,
    idempotence: bool | None = None,
    linger_ms: int | None = None,
    batch_size: int | None = None,
    partition: int | None = None,
    transaction: str | None = None,
    props: Mapping[str, object] | None = None,
    check: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> JavaResult:
    """Produce ``records`` (see ``record_line``) or ``count`` generated records
    (key ``key-i``, value ``value-i``). Result lines: index, partition, offset, timestamp.
    ``transaction`` "commit" or "abort": all in one transaction (props must name a
    transactional.id)."""
    args = ["produce", "--bootstrap", bootstrap, "--topic", topic, "--acks", acks]
    if transaction is not None:
        args += ["--transaction", transaction]
    if compression is not None:
        args += ["--compression", compression]
    if idempotence is not None:
        args += ["--idempotence", str(idempotence).lower()]
    if linger_ms is not None:
        args += ["--linger-ms", str(linger_ms)]
    if batch_size is not None:
        args += ["--batch-size", str(batch_size)]
    if partition is not None:
        args += ["--partition", str(partition)]
    stdin = None
    if records is not None:
        args.append("--stdin")
        stdin = "".join(json.dumps(r) + "\n" for r in records)
    else:
        args += ["--count", str(count if count is not None else 1)]
    args += props_args(props)
    return run(args, stdin=stdin, check=check, timeout=timeout)


def consume(
    bootstrap: str,
    topics: str | Sequence[str],
    *,
    group: str | None = None,
    offset_reset: str = "earliest",
    max_records: int | None = None,
    until_end: bool = False,
    timeout_ms: int = 10000,
    isolation_level: str | None = None,
    partition: int | None = None,
    commit: bool = False,
    props: Mapping[str, object] | None = None,
    check: bool = True,
) -> JavaResult:
    """Consume and return records (topic, partition, offset, key, value, headers,
    timestamp, timestamp_type). Without ``group`` the tool assigns all partitions and
    seeks to ``offset_reset`` (earliest / latest / an offset number)."""
    args = ["consume", "--bootstrap", bootstrap, "--from", offset_reset]
    for t in [topics] if isinstance(topics, str) else topics:
        args += ["--topic", t]
    if group is not None:
        args += ["--group", group]
    if max_records is not None:
        args += ["--max-records", str(max_records)]
    if until_end:
        args.append("--until-end")
    if isolation_level is not None:
        args += ["--isolation-level", isolation_level]
    if partition is not None:
        args += ["--partition", str(partition)]
    if commit:
        args.append("--commit")
    args += ["--timeout-ms", str(timeout_ms)]
    args += props_args(props)
    return run(args, check=check, timeout=timeout_ms / 1000 + 45)


def admin(
    bootstrap: str,
    command_name: str,
    *args: str,
    check: bool = True,
    props: Mapping[str, object] | None = None,
) -> JavaResult:
    """An admin subcommand, e.g. ``admin(b, "create-topic", "--topic", t, "--partitions", "3")``."""
    return run([command_name, "--bootstrap", bootstrap, *args, *props_args(props)], check=check)


def admin_steps(
    bootstrap: str, steps: Sequence[Sequence[str] | Mapping[str, Any]], timeout: float = 120
) -> list[list[dict[str, Any]]]:
    """Admin commands run one after the other by one Admin client in one JVM (KafkaTool
    ``script``): each step is a command's arguments (no --bootstrap), or {"args": [...],
    "lines": N, "within_ms": MS} to run it again until it prints N lines. Returns the
    lines of each step; a failed step's one line is {"error": {"type", "message"}}."""
    stdin = "".join(
        json.dumps(list(step) if not isinstance(step, Mapping) else dict(step)) + "\n"
        for step in steps
    )
    result = run(["script", "--bootstrap", bootstrap], stdin=stdin, timeout=timeout, check=False)
    if result.returncode != 0:
        raise JavaToolError(f"Java admin script failed:\n{result.describe()}")
    out: list[list[dict[str, Any]]] = [[] for _ in steps]
    for line in result.lines:
        step = line.pop("step", None)
        if step is None:
            raise JavaToolError(f"Java admin script failed:\n{result.describe()}")
        out[step].append(line)
    return out


def error_type(lines: Sequence[Mapping[str, Any]]) -> str | None:
    """The simple class name of a step's error, or of its first item's failure."""
    for line in lines:
        failure = line.get("error") or line.get("failure")
        if failure is not None:
            return str(failure["type"]).rsplit(".", 1)[-1]
    return None


# --------------------------------------------------------------------------- background


class JavaProcess:
    """A KafkaTool command running in the background (e.g. a consumer), whose JSON
    lines can be awaited while the test does other things; `interactive` ones read
    commands from stdin."""

    def __init__(self, args: Sequence[str], interactive: bool = False) -> None:
        self.args = list(args)
        self.proc = subprocess.Popen(
            command(args),
            stdin=subprocess.PIPE if interactive else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                self._queue.put(json.loads(line))
        self._queue.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def next_line(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON line, or None at end of output. Raises on timeout."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise JavaToolError(
                f"no output from java KafkaTool {' '.join(self.args)} within {timeout}s\n"
                f"--- stderr ---\n{self.stderr[-8000:]}"
            ) from None
        if item is not None:
            self.lines.append(item)
            if "error" in item:
                raise JavaToolError(f"Java client error: {item['error']}\n{self.stderr[-8000:]}")
        return item

    def wait_for(self, predicate: Any, timeout: float = 30.0) -> dict[str, Any]:
        """Read lines until ``predicate(line)`` is true; returns that line."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise JavaToolError(f"condition not met within {timeout}s; lines: {self.lines}")
            line = self.next_line(left)
            if line is None:
                raise JavaToolError(
                    f"tool exited ({self.proc.wait()}) before the condition; lines: {self.lines}\n"
                    f"{self.stderr[-8000:]}"
                )
            if predicate(line):
                return line

    def wait_event(self, name: str, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_for(lambda x: x.get("event") == name, timeout)

    def records(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait until ``count`` more records arrived; returns them."""
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            left = deadline - time.monotonic()
            out.append(self.wait_for(lambda x: "event" not in x, max(left, 0.001)))
        return out

    def finish(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait for exit; returns all lines seen."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.next_line(max(deadline - time.monotonic(), 0.001))
            if line is None:
                break
        self.proc.wait(max(deadline - time.monotonic(), 0.001))
        return self.lines

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def background(args: Sequence[str]) -> Iterator[JavaProcess]:
    proc = JavaProcess(args)
    try:
        yield proc
    finally:
        proc.close()
