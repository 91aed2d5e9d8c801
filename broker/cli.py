"""Command line: `python -m odradek --data-dir DIR --port PORT` (or `odradek ...`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from datetime import datetime
from pathlib import Path

import structlog

from odradek.broker.cluster.joining import ClusterJoinError
from odradek.broker.cluster.quorum.first_voters import FirstVotersError, parse_initial_controllers
from odradek.broker.dataplane.log_dirs import LogDirError
from odradek.broker.network import memory
from odradek.broker.observability import health, logs, metrics
from odradek.broker.settings.config import BrokerConfig, ConfigError
from odradek.broker.settings.listeners import ListenError, ignored_controller_listeners
from odradek.broker.settings.sources import read_properties, settings_from_environment


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="odradek",
        description="A Kafka-compatible broker. `odradek health` checks a running one.",
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        help="where logs live (./data); several directories separated by commas, as log.dirs",
    )
    parser.add_argument(
        "--host", default=None, help="shorthand for listeners=PLAINTEXT://HOST:PORT (127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=None, help="the same listener's port (9092)")
    parser.add_argument("--metrics-port", type=int, default=None, help="serve /metrics here")
    parser.add_argument("--config", type=Path, help="a Kafka server.properties file")
    parser.add_argument(
        "--environment",
        action="store_true",
        help="read settings from KAFKA_* environment variables, as the apache/kafka image "
        "does (KAFKA_ADVERTISED_LISTENERS -> advertised.listeners); they win over --config",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties setting; repeatable, wins over --config and the environment",
    )
    parser.add_argument(
        "--enable-faults",
        action="store_true",
        help="let tests inject faults through /faults on the listeners (also "
        "ODRADEK_ENABLE_FAULTS=true); for test brokers only",
    )
    first_voters = parser.add_mutually_exclusive_group()
    first_voters.add_argument(
        "--standalone",
        action="store_true",
        help="a new controller with controller.quorum.bootstrap.servers starts its quorum "
        "as its only voter (as kafka-storage format --standalone)",
    )
    first_voters.add_argument(
        "--initial-controllers",
        metavar="ID@HOST:PORT:DIRECTORY_ID,...",
        help="a new dynamic quorum's first voters (as kafka-storage format does)",
    )
    first_voters.add_argument(
        "--no-initial-controllers",
        action="store_true",
        help="a new controller joins an existing dynamic quorum as an observer, to be "
        "added with kafka-metadata-quorum add-controller",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument(
        "--kafka-ready-lines",
        action="store_true",
        help="once serving, print to stdout the lines Kafka logs when it has started, "
        "which tools written for Kafka's images wait for (Testcontainers' Kafka modules)",
    )
    return parser.parse_args(argv)


def build_config(args: argparse.Namespace) -> BrokerConfig:
    """The configuration the arguments describe; raises ConfigError."""
    config = BrokerConfig()
    settings: dict[str, str] = {}
    if args.config:
        try:
            settings.update(read_properties(args.config))
        except OSError as exc:
            raise ConfigError(f"--config {args.config}: {exc.strerror or exc}") from None
    if args.environment:
        settings.update(settings_from_environment(os.environ))
    for item in args.override:
        key, separator, value = item.partition("=")
        if not separator:
            raise ConfigError(f"--override expects KEY=VALUE, got {item!r}")
        settings[key.strip()] = value.strip()
    if args.host is not None or args.port is not None:
        if "listeners" in settings:
            raise ConfigError("give either --host/--port or the listeners setting, not both")
        host = args.host if args.host is not None else "127.0.0.1"
        port = args.port if args.port is not None else 9092
        settings["listeners"] = f"PLAINTEXT://{f'[{host}]' if ':' in host else host}:{port}"
    config.apply(settings)
    if args.data_dir is not None:
        config.apply({"log.dirs": str(args.data_dir)})  # the same setting
    if args.metrics_port is not None:
        config.metrics_port = args.metrics_port
    if args.standalone:
        config.initial_controllers = "standalone"
    elif args.no_initial_controllers:
        config.initial_controllers = "none"
    elif args.initial_controllers:
        try:  # checked now: the controller would fail on it later
            parse_initial_controllers(args.initial_controllers, "CONTROLLER")
        except FirstVotersError as exc:
            raise ConfigError(str(exc)) from None
        config.initial_controllers = args.initial_controllers
    config.enable_faults = args.enable_faults or os.environ.get(
        "ODRADEK_ENABLE_FAULTS", ""
    ).lower() in ("true", "1", "yes")
    # fails here, before anything starts, if the listeners or the KRaft settings do not fit
    config.resolved_listeners()
    return config


def check_data_dir(path: Path) -> None:
    """Fail now, with the reason, if the data directory cannot be created or written."""
    probe = path / ".odradek-write-check"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"data directory {path} cannot be written: {exc.strerror or exc}"
        ) from None


# a clean stop waits for nothing remote for long; past this, exit anyway
STOP_LIMIT_S = 60.0

# What Kafka logs once it serves, in its log format: Testcontainers' Kafka modules wait
# for the first (apache/kafka), the second (Confluent's image with ZooKeeper) or the third
# (Confluent's with KRaft). A controller of its own logs the third alone.
BROKER_READY_LINES = (
    "[BrokerLifecycleManager id={node}] The broker has been unfenced. "
    "Transitioning from RECOVERY to RUNNING. (kafka.server.BrokerLifecycleManager)",
    "[KafkaServer id={node}] started (kafka.server.KafkaServer)",
)
SERVER_READY_LINE = (
    "[KafkaRaftServer nodeId={node}] Kafka Server started (kafka.server.KafkaRaftServer)"
)


def kafka_ready_lines(node_id: int, now: datetime, broker: bool = True) -> str:
    stamp = f"{now:%Y-%m-%d %H:%M:%S},{now.microsecond // 1000:03d}"
    lines = [*BROKER_READY_LINES, SERVER_READY_LINE] if broker else [SERVER_READY_LINE]
    return "".join(f"[{stamp}] INFO {line.format(node=node_id)}\n" for line in lines)


async def run(config: BrokerConfig, ready_lines: bool = False) -> int:
    """Serve until stopped; the exit status (1: the log directories failed)."""
    from odradek.broker.server import Broker

    broker = Broker(config)
    await broker.start()
    if ready_lines:
        broker_role = config.cluster().is_broker
        sys.stdout.write(kafka_ready_lines(config.node_id, datetime.now(), broker_role))
        sys.stdout.flush()
    if config.metrics_port is not None:
        metrics.serve(broker.listeners[0].host or "0.0.0.0", config.metrics_port)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    try:
        await broker.serve_until_stopped()
    finally:
        try:
            await asyncio.wait_for(broker.stop(), STOP_LIMIT_S)
        except TimeoutError:  # the logs recover at the next start, as after kill -9
            structlog.get_logger().error("stop did not finish: exiting", limit_s=STOP_LIMIT_S)
    return 1 if broker.failed else 0


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["health"]:
        sys.exit(health.main(arguments[1:]))
    # kio registers hypothesis strategies whenever hypothesis is importable (it is in
    # test environments), which costs ~150 ms of start-up; the broker never uses them.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    args = parse_args(arguments)
    logs.configure(args.log_level)
    try:
        config = build_config(args)
        check_data_dir(config.data_dir)
    except ConfigError as exc:
        sys.exit(f"odradek: {exc}")
    report_unused(config)
    memory.keep_freed_buffers()
    try:
        status = _run_loop(config, args.kafka_ready_lines)
    except (ListenError, ClusterJoinError, LogDirError) as exc:
        sys.exit(f"odradek: {exc}")
    if status:
        sys.exit(status)


def report_unused(config: BrokerConfig) -> None:
    log = structlog.get_logger()
    if config.unused:
        log.info("Kafka settings accepted but not used by Odradek", settings=config.unused)
    controllers = ignored_controller_listeners(config.listeners, config.controller_listener_names)
    if controllers and config.cluster().standalone:
        log.info("controller listeners not opened: one node has no quorum", names=controllers)


def _run_loop(config: BrokerConfig, ready_lines: bool) -> int:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; plain asyncio still works
        return asyncio.run(run(config, ready_lines))
    return uvloop.run(run(config, ready_lines))
