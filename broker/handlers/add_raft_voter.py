"""AddRaftVoter (80): see raft_voters.py."""

from __future__ import annotations

from odradek.broker.handlers.raft_voters import handle_add as handle

MIN_VERSION, MAX_VERSION = 0, 1
__all__ = ["MAX_VERSION", "MIN_VERSION", "handle"]
