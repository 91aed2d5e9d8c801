"""UnregisterControllerResponse v0, in the form of kio's generated classes.

Written after UnregisterControllerResponse.json of Apache Kafka 4.4. The error code is
a plain int16 where kio's classes have an ErrorCode: the code this API answers most,
CONTROLLER_ID_NOT_REGISTERED (136), is newer than kio's table of them.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32Timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterControllerResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(94)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """Duration in milliseconds for which the request was throttled due to a quota
    violation, or zero if the request did not violate any quota.
    """
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """The error code, or 0 if there was no error."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The top-level error message, or `null` if there was no top-level error."""
