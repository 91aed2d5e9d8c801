"""Time to ready through Testcontainers' Kafka modules.

The Odradek image, started by each module: Java's KafkaContainer (2.0.5), Go's
modules/kafka Run (v0.44.0) and Python's KafkaContainer (4.15.0; by default and with
with_kraft()), from the start call to the module's ready (it has seen its log line),
through podman's Docker API. Beside it Apache Kafka 4.4 from its jars, started as
bench/reference_kafka.py starts it, since the apache/kafka image cannot be pulled here:
the storage format that apache/kafka's start script runs first, then spawn to
"Transitioning from RECOVERY to RUNNING", the line the Java and Go modules wait for.
Kafka's figure has no container in it, so against a module's it is a lower bound of
what the apache/kafka image would take. The broker processes alone (no container,
spawn to the same line), the image started with its own command, without a module, and
a container that runs `true` (podman's own share) are measured too. Each case runs
`--repeats` times, in turn; medians are reported.

    make bench-testcontainers                 (python -m bench.testcontainers_start)
    python -m bench.testcontainers_start --quick     one repeat

It needs the image (`make image`: localhost/odradek:latest), the Java and Go programs
of tests/testcontainers and Kafka's jars (`make install-test`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import reference_kafka
from bench.podman_api import PodmanService
from bench.report import RESULTS_DIR, command_line, environment

REPO = Path(__file__).resolve().parent.parent
TC_DIR = REPO / "tests" / "testcontainers"
JAVA_CLASSPATH = os.pathsep.join(
    [str(TC_DIR / "java" / "target" / "classes"), str(TC_DIR / "java" / "lib" / "*")]
)
GO_PROGRAM = TC_DIR / "go" / "bin" / "tckafka"
RUNNING = "Transitioning from RECOVERY to RUNNING"
LIMIT_S = 120.0


def program_result(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """The Java or Go program's JSON line: ready_seconds (and Java's client_seconds)."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=LIMIT_S)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


def python_ready(image: str, label: str, kraft: bool) -> float:
    from testcontainers.community.kafka import KafkaContainer

    key, _, value = label.partition("=")
    kafka = KafkaContainer(image).with_kwargs(labels={key: value})
    if kraft:
        kafka.with_kraft()
    began = time.monotonic()
    with kafka:
        return time.monotonic() - began


def container_true(image: str, label: str, docker_host: str) -> float:
    """A container of the image that runs `true`: created, started, waited for, removed."""
    from docker.client import DockerClient  # testcontainers' dependency

    client = DockerClient(base_url=docker_host)
    key, _, value = label.partition("=")
    began = time.monotonic()
    client.containers.run(image, ["true"], remove=True, labels={key: value})
    return time.monotonic() - began


def image_alone(image: str, label: str, docker_host: str) -> float:
    """The image with its own command, through the Docker API: created and started until
    its log has the line (the logs asked every 20 ms), no module."""
    from docker.client import DockerClient

    client = DockerClient(base_url=docker_host)
    key, _, value = label.partition("=")
    began = time.monotonic()
    container = client.containers.run(image, detach=True, labels={key: value})
    try:
        while RUNNING.encode() not in container.logs():
            if time.monotonic() - began > LIMIT_S:
                raise RuntimeError(f"no {RUNNING!r} in the log:\n{container.logs()!r}")
            time.sleep(0.02)
        return time.monotonic() - began
    finally:
        container.remove(force=True, v=True)


def odradek_process(workdir: Path) -> float:
    """`python -m odradek --kafka-ready-lines` on an empty data dir: spawn to the line."""
    data = Path(tempfile.mkdtemp(dir=workdir))
    began = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "odradek", "--data-dir", str(data), "--port", "0"]
        + ["--kafka-ready-lines"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if RUNNING in line:
                return time.monotonic() - began
        raise RuntimeError(f"odradek exited ({proc.wait()}) without the line")
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data, ignore_errors=True)


def kafka_process(workdir: Path) -> dict[str, float]:
    """Kafka 4.4 from the jars on a new storage dir: the format's seconds, then spawn to
    the line."""
    kafka = reference_kafka.ReferenceKafka(Path(tempfile.mkdtemp(dir=workdir)))
    began = time.monotonic()
    try:
        kafka.start(LIMIT_S)
        assert kafka.figures is not None
        while RUNNING not in kafka.log_file.read_text(errors="replace"):
            if time.monotonic() - began > LIMIT_S:
                raise RuntimeError(f"Kafka logged no {RUNNING!r}:\n{kafka.log_tail()}")
            time.sleep(0.01)
        formatted = kafka.figures.format_seconds
        return {"kafka_format": formatted, "kafka": time.monotonic() - began - formatted}
    finally:
        kafka.stop()
        shutil.rmtree(kafka.base, ignore_errors=True)


def _renamed(result: dict[str, float], name: str) -> dict[str, float]:
    """A program's ready_seconds as `name`, its client_seconds as `name`_client."""
    renamed = {name: result["ready_seconds"]}
    if "client_seconds" in result:
        renamed[f"{name}_client"] = result["client_seconds"]
    return renamed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="localhost/odradek:latest")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one repeat")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    for needed in (GO_PROGRAM, TC_DIR / "java" / "lib" / ".stamp"):
        if not needed.exists():
            sys.exit(f"{needed} is missing: run `make install-test`")
    if not reference_kafka.available():
        sys.exit("Kafka's jars are not in tests/reference/lib: run `make install-test`")
    podman = {**os.environ, "CONTAINERS_CONF": str(REPO / "docker/podman/containers.conf")}
    # Python's with_kraft() wants a tag that reads as Confluent Platform 7.0.0 or later
    cp_image = args.image.rsplit(":", 1)[0] + ":7.6.0"
    subprocess.run(["podman", "tag", args.image, cp_image], env=podman, check=True)
    workdir = Path(tempfile.mkdtemp(prefix="odradek-bench-tc-"))
    service = PodmanService(workdir)
    label = f"odradek.bench.session={uuid.uuid4().hex[:12]}"
    env = service.client_env()
    os.environ.update(env)  # Python's module, in this process
    java = ["java", "-Dready.only=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]
    java += ["-cp", JAVA_CLASSPATH, "dev.odradek.testcontainers.KafkaModuleCheck"]
    go = [str(GO_PROGRAM), "-image", args.image, "-label", label, "-ready-only"]
    # each case gives one or more figures, in seconds
    cases: dict[str, Callable[[], dict[str, float]]] = {
        "java": lambda: _renamed(program_result([*java, args.image, label], env), "java"),
        "go": lambda: _renamed(program_result(go, env), "go"),
        "python": lambda: {"python": python_ready(args.image, label, kraft=False)},
        "python_kraft": lambda: {"python_kraft": python_ready(cp_image, label, kraft=True)},
        "container_true": lambda: {
            "container_true": container_true(args.image, label, service.docker_host)
        },
        "image_alone": lambda: {"image_alone": image_alone(args.image, label, service.docker_host)},
        "odradek_process": lambda: {"odradek_process": odradek_process(workdir)},
        "kafka": lambda: kafka_process(workdir),
    }
    figures: dict[str, list[float]] = {}
    began, load = time.monotonic(), os.getloadavg()
    print(f"odradek testcontainers start bench, {repeats} repeat(s), work dir {workdir}")
    service.start()
    try:
        for repeat in range(repeats):
            order = list(cases) if repeat % 2 == 0 else list(reversed(cases))
            for name in order:
                measured = cases[name]()
                for key, value in measured.items():
                    figures.setdefault(key, []).append(value)
                shown = ", ".join(f"{key} {value:.2f} s" for key, value in measured.items())
                print(f"  {repeat + 1}/{repeats} {shown}", flush=True)
    finally:
        service.stop()
        listed = subprocess.run(
            ["podman", "ps", "-a", "-q", "--filter", f"label={label}"],
            env=podman,
            capture_output=True,
            text=True,
        )
        if listed.stdout.split():
            subprocess.run(["podman", "rm", "-f", "-v", *listed.stdout.split()], env=podman)
        shutil.rmtree(workdir, ignore_errors=True)
    report(figures, repeats, time.monotonic() - began, load)


def report(
    figures: dict[str, list[float]],
    repeats: int,
    seconds: float,
    load: tuple[float, float, float],
) -> None:
    median = {name: statistics.median(values) for name, values in figures.items()}
    kafka_total = median["kafka_format"] + median["kafka"]
    rows: list[tuple[str, float | None, float | None]] = [
        ("Java: KafkaContainer.start()", median["java"], kafka_total),
        ("Java: Testcontainers' client set up before (once per JVM)", median["java_client"], None),
        ("Go: kafka.Run()", median["go"], kafka_total),
        ("Python: KafkaContainer.start()", median["python"], kafka_total),
        ("Python: KafkaContainer.with_kraft().start()", median["python_kraft"], kafka_total),
        ("the image alone: created, started, to the line", median["image_alone"], kafka_total),
        ("broker process alone, spawn to the line", median["odradek_process"], median["kafka"]),
        ("Kafka's storage format first (its own JVM)", None, median["kafka_format"]),
        ("a container of the image that runs `true`", median["container_true"], None),
    ]
    lines = ["| case | Odradek | Kafka 4.4 from jars | Kafka/Odradek |", "|---|---|---|---|"]
    documents: list[dict[str, Any]] = []
    for case, odradek, kafka in rows:
        ratio = kafka / odradek if odradek and kafka else None
        shown = [f"{v:.2f} s" if v is not None else "" for v in (odradek, kafka)]
        lines.append(f"| {case} | {shown[0]} | {shown[1]} | {f'{ratio:.2f}' if ratio else ''} |")
        documents.append({"case": case, "odradek_s": odradek, "kafka_s": kafka, "ratio": ratio})
    notes = [
        f"Medians of {repeats} run(s). Module rows: the start call to the module's ready, the "
        "Odradek image through podman's Docker API; their Kafka column is Kafka 4.4 from its "
        "jars (format, then spawn to the line), with no container, so a lower bound for the "
        "apache/kafka image. Python's module looks at the log once a second "
        "(TC_POOLING_INTERVAL), which rounds its figures up.",
    ]
    table = "\n".join(lines)
    command = command_line()
    print("\n" + table + "\n\n" + "\n".join(notes) + f"\n\ncommand: `{command}`")
    print(f"took {seconds:.0f}s")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / "testcontainers_start.json"
    document = {
        "command": command,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(seconds, 1),
        "environment": environment(kafka=reference_kafka.VERSION, kafka_jvm=reference_kafka.HEAP),
        "ratio_meaning": "Kafka's seconds / Odradek's: >1 means Odradek is ready sooner",
        "rows": documents,
        "repeats": {name: [round(v, 3) for v in values] for name, values in figures.items()},
        "notes": notes,
        "loadavg_at_start": load,
        "loadavg_at_end": os.getloadavg(),
        "table_markdown": table,
    }
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"results: {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
