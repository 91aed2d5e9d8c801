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

`controller_mutation_rate` (partitions created or deleted per second) is a token
bucket, as Kafka's: it holds up to `controller.quota.window.num` windows' worth of
partitions and starts full. CreateTopics v6+, DeleteTopics v5+ and CreatePartitions v3+
are strict: while the bucket is below zero a topic is refused THROTTLING_QUOTA_EXCEEDED,
though one that finds it at zero or above may take it below. Older versions are
permissive: everything is done and the answer says how long the client must wait.

With no quota set, `enabled` is False and the produce and fetch paths test only that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.broker.settings.client_quotas import (
    CLIENT_ID,
    CONNECTION_CREATION_RATE,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    IP,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    Entity,
    Quotas,
)
from odradek.broker.settings.config import BrokerConfig

# the user a quota names for a client that has not authenticated, as Kafka's
ANONYMOUS = "ANONYMOUS"
KINDS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE)


class QuotaExceeded(Exception):
    """A strict controller mutation quota refused (the request's MutationQuota says how
    long the client is to wait)."""


@dataclass(slots=True)
class TokenBucket:
    """Kafka's TokenBucket: refilled at `rate` tokens a second up to `burst`."""

    rate: float
    burst: float
    tokens: float
    updated_ms: int

    def measure(self, now_ms: int) -> float:
        elapsed = max(0, now_ms - self.updated_ms) / 1000
        self.tokens = min(self.burst, self.tokens + self.rate * elapsed)
        self.updated_ms = now_ms
        return self.tokens

    def take(self, tokens: float, now_ms: int) -> None:
        self.tokens = min(self.burst, self.measure(now_ms) - tokens)

    def wait_ms(self, now_ms: int) -> int:
        """How long until the bucket is back at zero."""
        return max(0, round(-self.measure(now_ms) / self.rate * 1000))


@dataclass(slots=True)
class MutationQuota:
    """One request's use of a controller_mutation_rate bucket (None: no quota)."""

    bucket: TokenBucket | None
    strict: bool
    throttled_until_ms: int = 0

    def take(self, partitions: int, now_ms: int) -> None:
        """Count `partitions` created or deleted. Strict: raises QuotaExceeded, counting
        nothing, when the bucket is already below zero. Permissive: always counts, and
        the client waits until the bucket is back at zero."""
        if self.bucket is None:
            return
        if self.strict and self.bucket.measure(now_ms) < 0:
            self.throttled_until_ms = now_ms + self.bucket.wait_ms(now_ms)
            raise QuotaExceeded
        self.bucket.take(partitions, now_ms)
        if not self.strict:
            self.throttled_until_ms = now_ms + self.bucket.wait_ms(now_ms)

    def throttle_ms(self, now_ms: int) -> int:
        """What is left of the wait this request called for."""
        return max(0, self.throttled_until_ms - now_ms)


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

    def __init__(
        self, window_num: int, window_size_seconds: int, mutation_windows: tuple[int, int] = (11, 1)
    ) -> None:
        self.samples = window_num
        self.window_ms = window_size_seconds * 1000
        self.mutation_seconds = mutation_windows[0] * mutation_windows[1]  # a full bucket's
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._ip_bounds: dict[str | None, float] = {}  # ip (None: the default) -> rate
        self.enabled = False  # any quota set at all
        self._bounds: dict[str, dict[Entity, float]] = {kind: {} for kind in KINDS}
        self._rates: dict[tuple[str, str, str], Rate] = {}
        # (kind, user, client-id) -> (sensor tags, bound): resolved once per client
        self._resolved: dict[tuple[str, str, str], tuple[tuple[str, str], float]] = {}

    @classmethod
    def of(cls, config: BrokerConfig) -> ClientQuotas:
        mutation_windows = (
            config.controller_quota_window_num,
            config.controller_quota_window_size_seconds,
        )
        return cls(config.quota_window_num, config.quota_window_size_seconds, mutation_windows)

    def update(self, quotas: Quotas) -> None:
        """The quotas changed: bounds from now on (rates measured so far are kept)."""
        self._bounds = _lookup(quotas)
        self._resolved = {}
        self.enabled = any(self._bounds.values())
        self._ip_bounds = {
            entity[0][1]: values[CONNECTION_CREATION_RATE]
            for entity, values in quotas.items()
            if entity[0][0] == IP and CONNECTION_CREATION_RATE in values
        }

    def _bound(self, kind: str, user: str, client_id: str) -> tuple[tuple[str, str], float]:
        key = (kind, user, client_id)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = resolve(self._bounds[kind], user, client_id)
        return found

    def _sensor(self, kind: str, user: str, client_id: str) -> tuple[Rate | None, float]:
        tags, bound = self._bound(kind, user, client_id)
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

    def mutation_quota(self, user: str, client_id: str, strict: bool, now_ms: int) -> MutationQuota:
        """The controller_mutation_rate bucket of this client, for one request."""
        tags, bound = self._bound(CONTROLLER_MUTATION_RATE, user, client_id)
        if bound <= 0:
            return MutationQuota(None, strict)
        bucket = self._buckets.get(tags)
        burst = bound * self.mutation_seconds
        if bucket is None:
            bucket = self._buckets[tags] = TokenBucket(bound, burst, burst, now_ms)
        bucket.rate, bucket.burst = bound, burst  # the quota may have changed
        return MutationQuota(bucket, strict)

    def connection_throttle_ms(self, ip: str, now_ms: int) -> int:
        """Count a new connection from `ip` against its connection_creation_rate; how
        long to hold it before closing it when that takes the rate over (at most a
        window), 0 to take it in."""
        bound = self._ip_bounds.get(ip, self._ip_bounds.get(None))
        if bound is None:
            return 0
        key = (CONNECTION_CREATION_RATE, ip, "")
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = Rate(self.samples, self.window_ms)
        rate.record(1, now_ms)
        observed = rate.measure(now_ms)
        if observed <= bound:
            return 0
        rate.record(-1, now_ms)  # a connection refused does not count
        wait = (observed - bound) / bound * rate.window_size_ms(now_ms)
        return min(round(wait), self.window_ms)

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
        full = [tags for tags, b in self._buckets.items() if b.measure(now_ms) >= b.burst]
        for tags in full:
            del self._buckets[tags]
