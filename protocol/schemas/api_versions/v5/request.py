"""ApiVersionsRequest v5, in the form of kio's generated classes: v4 and the cluster
and node the client expects (KIP-1242).

Written after ApiVersionsRequest.json of Apache Kafka 4.4.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    client_software_name: str = field(metadata={"kafka_type": "string"})
    """The name of the client."""
    client_software_version: str = field(metadata={"kafka_type": "string"})
    """The version of the client."""
    cluster_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The cluster the client believes it connects to, or null while bootstrapping."""
    node_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """The node the client believes it connects to, or -1 while bootstrapping."""
