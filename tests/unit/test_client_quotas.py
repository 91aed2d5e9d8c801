"""Client quotas' pure parts: which entity's quota applies (Kafka's order), the
sampled rate and the throttle time it calls for, and the alteration checks."""

from __future__ import annotations

from odradek.broker.dataplane.quotas import ClientQuotas, Rate, resolve
from odradek.broker.settings.client_quotas import entity_of, plan_alterations
from odradek.protocol.errors import ErrorCode


def bounds(*entities: tuple[tuple[tuple[str, str | None], ...], float]) -> dict:
    return {entity_of(pairs): bound for pairs, bound in entities}


def test_the_most_specific_entity_wins_in_kafkas_order() -> None:
    levels = [
        ((("user", "u"), ("client-id", "c")), 1.0),
        ((("user", "u"), ("client-id", None)), 2.0),
        ((("user", "u"),), 3.0),
        ((("user", None), ("client-id", "c")), 4.0),
        ((("user", None), ("client-id", None)), 5.0),
        ((("user", None),), 6.0),
        ((("client-id", "c"),), 7.0),
        ((("client-id", None),), 8.0),
    ]
    expected_tags = [
        ("u", "c"), ("u", "c"), ("u", ""), ("u", "c"), ("u", "c"), ("u", ""), ("", "c"), ("", "c"),
    ]  # fmt: skip
    for index in range(len(levels)):
        tags, bound = resolve(bounds(*levels[index:]), "u", "c")
        assert (tags, bound) == (expected_tags[index], levels[index][1])
    assert resolve({}, "u", "c") == (("", ""), 0.0)
    # another user's quota is not this one's
    assert resolve(bounds(((("user", "v"),), 1.0)), "u", "c")[1] == 0.0


def test_a_rate_over_its_bound_throttles_for_the_time_to_come_back() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(1000, 0)
    # no history: counted over (samples - 1) windows, 10 s
    assert rate.measure(0) == 100.0
    quotas = ClientQuotas(11, 1)
    quotas.update({entity_of([("client-id", "c")]): {"producer_byte_rate": 100.0}})
    assert quotas.enabled
    assert quotas.record("producer_byte_rate", "ANONYMOUS", "c", 1000, 0) == 0
    # 2000 bytes in 10 s is 200/s: 100/s over, for a 10 s window: 10 s to wait
    assert quotas.record("producer_byte_rate", "ANONYMOUS", "c", 1000, 0) == 10000
    assert quotas.record("producer_byte_rate", "ANONYMOUS", "other", 10**6, 0) == 0
    assert quotas.max_in_window("producer_byte_rate", "ANONYMOUS", "c") == 1000
    quotas.update({})
    assert not quotas.enabled


def test_alterations_are_checked_each_on_its_own() -> None:
    good = entity_of([("user", "u")])
    bad = entity_of([("user", "v")])
    outcome, after = plan_alterations(
        {},
        [
            (good, [("producer_byte_rate", 10.0)]),
            (bad, [("producer_byte_rate", 1.5)]),
        ],
    )
    assert outcome == [
        (good, None),
        (bad, (ErrorCode.invalid_request, "producer_byte_rate cannot be a fractional value.")),
    ]
    assert after == {good: {"producer_byte_rate": 10.0}}
    outcome, after = plan_alterations(after, [(good, [("producer_byte_rate", None)])])
    assert outcome == [(good, None)] and after == {}
