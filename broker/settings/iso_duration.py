"""ISO 8601 durations as `share.auto.offset.reset=by_duration:<duration>` gives them
(Java's Duration.parse: PnDTnHnMn.nS, optionally negative)."""

from __future__ import annotations

import re

_DURATION = re.compile(
    r"^([-+]?)P(?:([-+]?\d+)D)?"
    r"(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """Milliseconds in `text`; raises ValueError when it is no ISO 8601 duration or is
    negative."""
    match = _DURATION.match(text.strip())
    if match is None or text.strip().upper().endswith(("P", "T")):
        raise ValueError(f"{text!r} is not an ISO 8601 duration")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = (
        int(days or 0) * 86_400_000
        + int(hours or 0) * 3_600_000
        + int(minutes or 0) * 60_000
        + int(seconds or 0) * 1000
        + int(((fraction or "") + "000")[:3])
    )
    if sign == "-":
        total = -total
    if total < 0:
        raise ValueError(f"{text!r} is a negative duration")
    return total
