"""Kafka error codes (kio's table), re-exported for the rest of the broker, and the
default messages Kafka answers with where Odradek answers in its words."""

from kio.schema.errors import ErrorCode

__all__ = ["CONTROLLER_ID_NOT_REGISTERED", "ErrorCode", "default_message"]

# Kafka 4.4's codes newer than kio's table (answered in int16 fields of our own classes)
CONTROLLER_ID_NOT_REGISTERED = 136

_DEFAULT_MESSAGES = {
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.invalid_request: (
        "This most likely occurs because of a request being malformed by the client library "
        "or the message was sent to an incompatible broker. See the broker logs for more "
        "details."
    ),
    ErrorCode.unknown_server_error: (
        "The server experienced an unexpected error when processing the request."
    ),
    ErrorCode.invalid_group_id: "The group id is invalid.",
    ErrorCode.fenced_leader_epoch: (
        "The leader epoch in the request is older than the epoch on the broker."
    ),
    ErrorCode.fenced_state_epoch: (
        "The coordinator rejected the request because the state epoch did not match."
    ),
    ErrorCode.unknown_topic_id: "This server does not host this topic ID.",
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
}


def default_message(code: ErrorCode) -> str | None:
    """Kafka's own message for `code` (its Errors table), where one is used here."""
    return _DEFAULT_MESSAGES.get(code)
