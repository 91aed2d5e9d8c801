"""OffsetCommit (8), v2-v10 (v9: the first a member of a consumer or streams group must
use; v10 names topics by id).

- Members commit with their generation and member id (ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while the
  assignment is being handed out). A group with no members takes "simple"
  commits (generation -1, no member id), as from an admin or assign() user.
- Metadata longer than `offset.metadata.max.bytes`: OFFSET_METADATA_TOO_LARGE
  for that partition only. Unknown topics: UNKNOWN_TOPIC_OR_PARTITION; an unknown
  topic id (v10): UNKNOWN_TOPIC_ID, before any other check of the topic.
- The last commit wins, even when it moves an offset backwards.
- With ACLs: READ on the group (else every partition answers
  GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from kio.schema.offset_commit.v2.request import OffsetCommitRequest as V2
from kio.schema.offset_commit.v3.request import OffsetCommitRequest as V3
from kio.schema.offset_commit.v4.request import OffsetCommitRequest as V4
from kio.schema.offset_commit.v5.request import OffsetCommitRequest as V5
from kio.schema.offset_commit.v6.request import OffsetCommitRequest as V6
from kio.schema.offset_commit.v7.request import OffsetCommitRequest as V7
from kio.schema.offset_commit.v8.request import OffsetCommitRequest as V8
from kio.schema.offset_commit.v9.request import OffsetCommitRequest as V9
from kio.schema.offset_commit.v10.request import OffsetCommitRequest as V10

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import commit_offsets, refuse_all
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 2, 10

OffsetCommitRequest = V2 | V3 | V4 | V5 | V6 | V7 | V8 | V9 | V10


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> Reply:
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        refused = refuse_all(request, ErrorCode.group_authorization_failed)
        return {"throttle_time": 0, "topics": refused}
    details = {
        "group_id": request.group_id,
        "generation": request.generation_id_or_member_epoch,
        "member_id": request.member_id,
        "group_instance_id": getattr(request, "group_instance_id", None),
        "version": ctx.version,
    }
    topics = await commit_offsets(ctx, request, details, lambda code: code)
    return {"throttle_time": 0, "topics": topics}
