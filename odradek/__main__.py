"""`python -m odradek`: the broker's command line (see odradek.broker.cli)."""

from odradek.broker.cli import main

main()
