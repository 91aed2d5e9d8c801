"""Which partition of an internal topic holds a key (a group id, a transactional id):
Java's String.hashCode of the key, as Kafka computes it, so Odradek and Kafka agree."""

from __future__ import annotations

import functools


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@functools.lru_cache(maxsize=65536)
def partition_for(key: str, partitions: int) -> int:
    h = java_string_hash(key)
    return 0 if h == -(1 << 31) else abs(h) % partitions
