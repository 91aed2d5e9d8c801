"""The control record a quorum's leader writes as it takes office (LeaderChange, as
Kafka's KRaft writes it): the new leader, the voters and those that voted for it."""

from __future__ import annotations

import io
import struct

from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter
from kio.schema.types import BrokerId
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from odradek.protocol.batch import ATTR_CONTROL, build_batch

LEADER_CHANGE = 2  # the control record type, after ABORT (0) and COMMIT (1)
_write_message = entity_writer(LeaderChangeMessage)


def leader_change_batch(leader: int, voters: list[int], granting: list[int], now_ms: int) -> bytes:
    message = LeaderChangeMessage(
        version=i16(0),
        leader_id=BrokerId(leader),
        voters=tuple(Voter(voter_id=i32(v)) for v in voters),
        granting_voters=tuple(Voter(voter_id=i32(v)) for v in granting),
    )
    value = io.BytesIO()
    _write_message(value, message)
    key = struct.pack(">hh", 0, LEADER_CHANGE)
    return build_batch([(key, value.getvalue())], timestamp=now_ms, attributes=ATTR_CONTROL)
