from .request import StreamsGroupTopologyDescriptionUpdateRequest
from .response import StreamsGroupTopologyDescriptionUpdateResponse

__all__ = (
    "StreamsGroupTopologyDescriptionUpdateRequest",
    "StreamsGroupTopologyDescriptionUpdateResponse",
)
