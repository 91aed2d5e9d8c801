"""ApiVersions (18), v0-v3.

- Lists exactly the versions this broker implements.
- A client asking a newer version than v3 gets UNSUPPORTED_VERSION in a v0 body
  that still lists the ranges (the server builds that answer, see server.py), so
  it can retry with a version it knows.
- Always answered with response header v0, even for flexible versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from broker.handlers.base import Api, Reply, RequestContext

MIN_VERSION, MAX_VERSION = 0, 3


def api_keys(apis: Iterable[Api]) -> list[dict[str, int]]:
    return [
        {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
        for api in apis
    ]


async def handle(ctx: RequestContext, request: Any) -> Reply:
    return {"error_code": 0, "api_keys": api_keys(ctx.broker.apis.values()), "throttle_time": 0}
