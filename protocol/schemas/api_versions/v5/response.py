"""ApiVersionsResponse v5, in the form of kio's generated classes: the fields of v4
(Apache Kafka 4.4's ApiVersionsResponse.json)."""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.response_header.v0.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32Timedelta, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersion:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    api_key: i16 = field(metadata={"kafka_type": "int16"})
    min_version: i16 = field(metadata={"kafka_type": "int16"})
    max_version: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class SupportedFeatureKey:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: str = field(metadata={"kafka_type": "string"})
    min_version: i16 = field(metadata={"kafka_type": "int16"})
    max_version: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalizedFeatureKey:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: str = field(metadata={"kafka_type": "string"})
    max_version_level: i16 = field(metadata={"kafka_type": "int16"})
    min_version_level: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    api_keys: tuple[ApiVersion, ...]
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    supported_features: tuple[SupportedFeatureKey, ...] = field(metadata={"tag": 0}, default=())
    """In v0-v3, features whose lowest level is 0 are left out."""
    finalized_features_epoch: i64 = field(
        metadata={"kafka_type": "int64", "tag": 1}, default=i64(-1)
    )
    finalized_features: tuple[FinalizedFeatureKey, ...] = field(metadata={"tag": 2}, default=())
    zk_migration_ready: bool = field(metadata={"kafka_type": "bool", "tag": 3}, default=False)
