"""Client quota enforcement: produce and fetch byte rates and request time, per
(user, client-id), as Kafka's ClientQuotaManager measures and throttles them.

Which quota applies to a client is the first entity set of (Kafka's order):
user+client-id, user+default client-id, user, default user+client-id, default
user+default client-id, default user, client-id, default client-id. Clients under the
same matched entity share one rate (a quota on a user alone covers all its clients).

A rate is the sum of `quota.window.num` samples of `quota.window.size.seconds` each,
divided by the time they span (never counted as less than all but one window). A
request that takes the rate over the quota is answered (at once) with the time the
client must wait for the rate to come back to the quota, and the broker reads nothing
more from that connection until then.

With no quota set, `enabled` is False and the produce and fetch paths test only that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.broker.settings.client_quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    Entity,
    Quotas,
)

# the user a quota names for a client that has not authenticated, as Kafka's
ANONYMOUS = "ANONYMOUS"
KINDS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_ms: int
    value: float = 0.0
    events: int = 0


@dataclass(slots=True)
class Rate:
    """Kafka's sampled Rate: `samples` windows of `window_ms`, one more kept for the
    window overlapping the oldest."""

    samples: int
    window_ms: int
    _samples: list[_Sample] = field(default_factory=list)
    _current: int = 0

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_ms >= expire:
                sample.start_ms = sample.last_ms = now_ms
                sample.value = 0.0
                sample.events = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        sample = self._samples[self._current]
        if now_ms - sample.start_ms >= self.window_ms:
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now_ms, now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.start_ms = sample.last_ms = now_ms
                sample.value = 0.0
                sample.events = 0
        sample.value += value
        sample.events += 1
        sample.last_ms = now_ms

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        elapsed = now_ms - min(sample.start_ms for sample in self._samples)
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """Per second."""
        size = self.window_size_ms(now_ms)  # purges first
        return sum(sample.value for sample in self._samples) * 1000.0 / size


def _lookup(quotas: Quotas) -> dict[str, dict[Entity, float]]:
    """kind -> {user/client-id entity -> its bound}."""
    by_kind: dict[str, dict[Entity, float]] = {kind: {} for kind in KINDS}
    for entity, values in quotas.items():
        for kind, bound in values.items():
            if kind in by_kind:
                by_kind[kind][entity] = bound
    return by_kind


def _entity(user: str | None, client: str | None) -> Entity:
    if user is not None and client is not None:
        # the TYPE_ORDER of client_quotas
        return ((CLIENT_ID, None if client == "" else client), (USER, None if user == "" else user))
    if user is not None:
        return ((USER, None if user == "" else user),)
    return ((CLIENT_ID, None if client == "" else client),)


def resolve(
    bounds: dict[Entity, float], user: str, client_id: str
) -> tuple[tuple[str, str], float]:
    """(the sensor's (user, client-id) tags, the bound) in Kafka's order; ("", "") and
    0 when no quota applies. A default entity is named "" here."""
    order = (
        (user, client_id, ((USER, user), (CLIENT_ID, client_id))),
        (user, client_id, ((USER, user), (CLIENT_ID, ""))),
        (user, "", ((USER, user),)),
        (user, client_id, ((USER, ""), (CLIENT_ID, client_id))),
        (user, client_id, ((USER, ""), (CLIENT_ID, ""))),
        (user, "", ((USER, ""),)),
        ("", client_id, ((CLIENT_ID, client_id),)),
        ("", client_id, ((CLIENT_ID, ""),)),
    )
    for tag_user, tag_client, pairs in order:
        names = dict(pairs)
        bound = bounds.get(_entity(names.get(USER), names.get(CLIENT_ID)))
        if bound is not None:
            return (tag_user, tag_client), bound
    return ("", ""), 0.0


class ClientQuotas:
    """The rates of every (kind, sensor tags) in use, and the bounds that apply."""

    def __init__(self, window_num: int, window_size_seconds: int) -> None:
        self.samples = window_num
        self.window_ms = window_size_seconds * 1000
        self.enabled = False  # any quota set at all
        self._bounds: dict[str, dict[Entity, float]] = {kind: {} for kind in KINDS}
        self._rates: dict[tuple[str, str, str], Rate] = {}
        # (kind, user, client-id) -> (sensor tags, bound): resolved once per client
        self._resolved: dict[tuple[str, str, str], tuple[tuple[str, str], float]] = {}

    def update(self, quotas: Quotas) -> None:
        """The quotas changed: bounds from now on (rates measured so far are kept)."""
        self._bounds = _lookup(quotas)
        self._resolved = {}
        self.enabled = any(self._bounds.values())

    def _sensor(self, kind: str, user: str, client_id: str) -> tuple[Rate | None, float]:
        key = (kind, user, client_id)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = resolve(self._bounds[kind], user, client_id)
        tags, bound = found
        if bound <= 0:
            return None, 0.0
        rate_key = (kind, *tags)
        rate = self._rates.get(rate_key)
        if rate is None:
            rate = self._rates[rate_key] = Rate(self.samples, self.window_ms)
        return rate, bound

    def record(self, kind: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value` and return the throttle time (ms) it calls for, 0 if none."""
        rate, bound = self._sensor(kind, user, client_id)
        if rate is None:
            return 0
        rate.record(value, now_ms)
        observed = rate.measure(now_ms)
        if observed <= bound:
            return 0
        return round((observed - bound) / bound * rate.window_size_ms(now_ms))

    def unrecord(self, kind: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a value recorded (a throttled fetch answers without its records)."""
        rate, _bound = self._sensor(kind, user, client_id)
        if rate is not None:
            rate.record(-value, now_ms)

    def max_in_window(self, kind: str, user: str, client_id: str) -> int | None:
        """The most that can be recorded at once without being throttled for sure (what
        a fetch may return), None without a quota."""
        _rate, bound = self._sensor(kind, user, client_id)
        if bound <= 0:
            return None
        return int(min(bound * (self.samples - 1) * self.window_ms / 1000, 2**31 - 1))

    def forget_idle(self, now_ms: int) -> None:
        """Drop the rates of clients silent for a whole measured window."""
        expire = self.samples * self.window_ms
        idle = [
            key
            for key, rate in self._rates.items()
            if all(now_ms - sample.last_ms >= expire for sample in rate._samples)
        ]
        for key in idle:
            del self._rates[key]
