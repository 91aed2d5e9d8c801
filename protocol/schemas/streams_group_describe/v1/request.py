"""StreamsGroupDescribeRequest v1, in the form of kio's generated classes.

Written after StreamsGroupDescribeRequest.json of Apache Kafka 4.4.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.types import GroupId
from kio.static.constants import EntityType
from kio.static.primitive import i16


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupDescribeRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(89)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_ids: tuple[GroupId, ...] = field(metadata={"kafka_type": "string"}, default=())
    """The ids of the groups to describe"""
    include_authorized_operations: bool = field(metadata={"kafka_type": "bool"})
    """Whether to include authorized operations."""
    include_topology_description: bool = field(metadata={"kafka_type": "bool"}, default=False)
    """Whether to include the full topology description from the topology description plugin in the
    response.
    """
