"""`python -m odradek`: the broker's command line (see odradek.broker.command)."""

from odradek.broker.command import main

main()
