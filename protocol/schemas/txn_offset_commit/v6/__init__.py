from .request import TxnOffsetCommitRequest
from .response import TxnOffsetCommitResponse

__all__ = (
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
)
