"""TxnOffsetCommitRequest v6, in the form of kio's generated classes.

Written after TxnOffsetCommitRequest.json of Apache Kafka 4.4: v6 names topics by id.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.types import GroupId, ProducerId, TransactionalId
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitRequestPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(28)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    committed_offset: i64 = field(metadata={"kafka_type": "int64"})
    committed_leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    committed_metadata: str | None = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitRequestTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(28)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[TxnOffsetCommitRequestPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(28)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    transactional_id: TransactionalId = field(metadata={"kafka_type": "string"})
    group_id: GroupId = field(metadata={"kafka_type": "string"})
    producer_id: ProducerId = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    generation_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    member_id: str = field(metadata={"kafka_type": "string"}, default="")
    group_instance_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    topics: tuple[TxnOffsetCommitRequestTopic, ...]
