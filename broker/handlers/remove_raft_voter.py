"""RemoveRaftVoter (81): see raft_voters.py."""

from __future__ import annotations

from odradek.broker.handlers.raft_voters import handle_remove as handle

MIN_VERSION, MAX_VERSION = 0, 0
__all__ = ["MAX_VERSION", "MIN_VERSION", "handle"]
