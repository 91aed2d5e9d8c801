from .request import StreamsGroupDescribeRequest
from .response import StreamsGroupDescribeResponse

__all__ = (
    "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse",
)
