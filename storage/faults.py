"""Storage errors (a full disk, an I/O error, a read-only data directory) as the
broker reports them: the request that hit one gets KAFKA_STORAGE_ERROR, and the log
says so once per path and cause in a while, with no traceback, however many requests
hit it. The append that failed left nothing behind (see Segment.append), so writes
succeed again once the cause is gone, without a restart."""

from __future__ import annotations

import errno
import os
import time

import structlog

log = structlog.get_logger("storage")

REPORT_INTERVAL_S = 30.0
# errors that mean the disk, not the request, is at fault
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EROFS, errno.EDQUOT, errno.EFBIG})

_last_report: dict[tuple[str, int], float] = {}
_since_report: dict[tuple[str, int], int] = {}


def is_storage_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def report(path: object, exc: OSError, operation: str) -> None:
    """Log a storage error at most once per REPORT_INTERVAL_S for each path and cause."""
    key = (str(path), exc.errno or 0)
    _since_report[key] = _since_report.get(key, 0) + 1
    now = time.monotonic()
    if now - _last_report.get(key, -REPORT_INTERVAL_S) < REPORT_INTERVAL_S:
        return
    log.error(
        "storage error",
        path=str(path),
        operation=operation,
        cause=os.strerror(exc.errno) if exc.errno else str(exc),
        errno=errno.errorcode.get(exc.errno or 0, exc.errno),
        failures_since_last_report=_since_report[key],
    )
    _last_report[key] = now
    _since_report[key] = 0
