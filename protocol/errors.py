"""Kafka error codes (kio's table), re-exported for the rest of the broker."""

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode"]
