"""Kafka error codes (kio's table), re-exported for the rest of the broker, and the
default messages Kafka answers with where Odradek answers in its words."""

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "default_message"]

_DEFAULT_MESSAGES = {
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.invalid_request: (
        "This most likely occurs because of a request being malformed by the client library "
        "or the message was sent to an incompatible broker. See the broker logs for more "
        "details."
    ),
}


def default_message(code: ErrorCode) -> str | None:
    """Kafka's own message for `code` (its Errors table), where one is used here."""
    return _DEFAULT_MESSAGES.get(code)
