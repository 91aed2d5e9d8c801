"""Unique, Kafka-legal names for topics, groups and transactional ids."""

from __future__ import annotations

import re
import uuid


def slug(text: str, limit: int = 60) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", text).strip("-")[:limit]


def unique_name(prefix: str) -> str:
    """A name no other test uses: ``<prefix>-<10 hex digits>``."""
    return f"{slug(prefix)}-{uuid.uuid4().hex[:10]}"
