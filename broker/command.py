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
    # kio registers hypothesis strategies whenever hypothesis is importable (it is in
    # test environments), which costs start-up time; the broker never uses them. Set
    # before the broker's modules are imported, since they import kio.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    from odradek.broker import cli

    cli.main(arguments)
