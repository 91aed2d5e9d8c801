"""ShareAcknowledge (79), v1-v2: acknowledgements outside a fetch (KIP-932).

The request continues a share session (epoch n) or closes it (-1); epoch 0 answers
INVALID_SHARE_SESSION_EPOCH, as does a wrong epoch; an unknown session
SHARE_SESSION_NOT_FOUND. Each partition's acknowledgements are written before the
answer; offsets the member does not hold answer INVALID_RECORD_STATE for that
partition, which then changes nothing. Closing the session releases what the member
still holds. With ACLs: READ on the group and on each topic.
"""

from __future__ import annotations

from kio.schema.share_acknowledge.v2.request import ShareAcknowledgeRequest

from odradek.broker.coordinators.share_sessions import INITIAL_EPOCH, ShareSessionError
from odradek.broker.handlers import share_common
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 2
# the fields read are those of v1: typed as the newest


async def handle(ctx: RequestContext, request: ShareAcknowledgeRequest) -> Reply:
    problem = share_common.request_problem(ctx, request)
    if problem is not None:
        return _top_error(*problem)
    share = ctx.services.share
    await share.ensure_started()
    group_id, member_id = share_common.member_of(request)
    epoch = request.share_session_epoch
    if epoch == INITIAL_EPOCH:
        return _top_error(
            ErrorCode.invalid_share_session_epoch, "ShareAcknowledge cannot open a session."
        )
    try:
        session = share.sessions.check(group_id, member_id, epoch)
    except ShareSessionError as exc:
        return _top_error(ErrorCode(exc.code), str(exc))
    acks = share_common.acknowledgements(request.topics)
    results = await share_common.acknowledge(ctx, group_id, member_id, acks)
    await share_common.end_session(ctx, session, epoch)
    answers = {
        tp: {"error_code": code, "error_message": message}
        for tp, (code, message) in results.items()
    }
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "acquisition_lock_timeout": ctx.services.group_settings(
            group_id
        ).share_record_lock_duration_ms,
        "responses": share_common.shape(ctx, answers),
        "node_endpoints": [],
    }


def _top_error(code: ErrorCode, message: str | None) -> Reply:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "acquisition_lock_timeout": 0,
        "responses": [],
        "node_endpoints": [],
    }
