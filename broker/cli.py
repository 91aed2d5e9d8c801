"""Command line: `python -m broker --data-dir DIR --port PORT` (or `odradek ...`)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from broker import logs, memory, metrics
from broker.config import BrokerConfig, read_properties


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="odradek", description="A Kafka-compatible broker.")
    parser.add_argument("--data-dir", type=Path, default=None, help="where logs live (./data)")
    parser.add_argument("--host", default=None, help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="Kafka port (9092)")
    parser.add_argument("--metrics-port", type=int, default=None, help="serve /metrics here")
    parser.add_argument("--config", type=Path, help="a Kafka server.properties file")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties setting; repeatable, wins over --config",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    return parser.parse_args(argv)


def build_config(args: argparse.Namespace) -> BrokerConfig:
    config = BrokerConfig()
    settings: dict[str, str] = {}
    if args.config:
        settings.update(read_properties(args.config))
    for item in args.override:
        key, separator, value = item.partition("=")
        if not separator:
            raise SystemExit(f"--override expects KEY=VALUE, got {item!r}")
        settings[key.strip()] = value.strip()
    if "log.dirs" in settings or "log.dir" in settings:
        config.data_dir = Path(settings.pop("log.dirs", settings.pop("log.dir", "")).split(",")[0])
    config.apply(settings)
    if args.data_dir is not None:
        config.data_dir = args.data_dir
    if args.host is not None:
        config.host = args.host
    if args.port is not None:
        config.port = args.port
    if args.metrics_port is not None:
        config.metrics_port = args.metrics_port
    return config


async def run(config: BrokerConfig) -> None:
    from broker.server import Broker

    broker = Broker(config)
    await broker.start()
    if config.metrics_port is not None:
        metrics.serve(config.host, config.metrics_port)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    try:
        await broker.serve_until_stopped()
    finally:
        await broker.stop()


def main(argv: list[str] | None = None) -> None:
    # kio registers hypothesis strategies whenever hypothesis is importable (it is in
    # test environments), which costs ~150 ms of start-up; the broker never uses them.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    args = parse_args(argv)
    logs.configure(args.log_level)
    config = build_config(args)
    memory.keep_freed_buffers()
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; plain asyncio still works
        asyncio.run(run(config))
    else:
        uvloop.run(run(config))
