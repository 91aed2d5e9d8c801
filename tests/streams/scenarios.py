"""What the Streams scenarios share, whichever group protocol the application runs:
the exactly-once check of the output, and the kill -9 of one of two instances."""

from __future__ import annotations

import threading
from collections.abc import Callable

from helpers import streams_app
from helpers.streams_app import Orders, Output, StreamsInstance


def check(output: Output, orders: Orders, copies: int = 1) -> None:
    """Every key of every output topic at its expected final value, no key the input did
    not make, and each order enriched `copies` times."""
    expected = orders.expected()
    for topic in streams_app.OUTPUTS:
        latest = output.latest(topic)
        wrong = {k: (latest.get(k), v) for k, v in expected[topic].items() if latest.get(k) != v}
        assert not wrong, (
            f"{topic}: {len(wrong)} keys wrong (got, want), e.g. {list(wrong.items())[:5]}"
        )
        assert set(latest) == set(expected[topic]), f"{topic}: keys no input made"
    repeated = {k: n for k, n in output.copies("enriched").items() if n != copies}
    assert not repeated, f"orders enriched other than {copies} times: {list(repeated.items())[:5]}"


def kill_one_of_two(
    bootstrap: str,
    prefix: str,
    make: Callable[[str], StreamsInstance],
    then: Callable[[], None] = lambda: None,
) -> None:
    """Two instances, "a" and "b"; 4000 orders, of which 3000 arrive while "a" is killed
    with kill -9 and started again. The output must be exactly once; `then` runs while
    both instances are still up."""
    orders = Orders(4000)
    streams_app.produce(bootstrap, prefix, orders, 0, 1000)
    first = make("a").start()
    second = make("b").start()
    try:
        first.wait_state("RUNNING")
        second.wait_state("RUNNING")
        feeder = threading.Thread(
            target=lambda: [
                streams_app.produce(bootstrap, prefix, orders, start, start + 250)
                for start in range(1000, 4000, 250)
            ]
        )
        feeder.start()
        streams_app.read_output(bootstrap, prefix, Orders(0).expected(), timeout=3)
        first.kill()
        feeder.join()
        first = make("a").start()
        first.wait_state("RUNNING")
        check(streams_app.read_output(bootstrap, prefix, orders.expected()), orders)
        then()
    finally:
        first.stop()
        second.stop()
