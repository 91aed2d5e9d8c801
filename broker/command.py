"""The `odradek` command. `odradek health` imports the probe alone: a container's
health check runs it every second, and the broker's modules take half a second of CPU
to import. Anything else is the broker's command line (odradek.broker.cli)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["health"]:
        from odradek.broker.observability import health

        sys.exit(health.main(arguments[1:]))
    from odradek.broker import cli

    cli.main(arguments)
