"""Run one client scenario against Odradek and Apache Kafka 4.4 in the same test.

``on_both(scenario, odradek, kafka)`` calls ``scenario(bootstrap)`` for each broker, both
at once (most of a scenario's time is spent waiting on the brokers), and returns what
each returned. When a scenario fails on either broker, the error says on which, with
both outcomes: failing on Kafka 4.4 too points at the client or the test, failing on
Odradek alone at Odradek. The test then asserts that both returned the same.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from helpers.broker import Broker
from helpers.reference_kafka import ReferenceKafka

T = TypeVar("T")
KAFKA, ODRADEK = "kafka44", "odradek"


class ScenarioFailed(AssertionError):
    pass


def on_both(scenario: Callable[[str], T], odradek: Broker, kafka: ReferenceKafka) -> dict[str, T]:
    """{"kafka44": outcome, "odradek": outcome}, or ScenarioFailed naming the broker(s)."""
    bootstraps = {KAFKA: kafka.bootstrap, ODRADEK: odradek.bootstrap}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(scenario, bootstrap) for name, bootstrap in bootstraps.items()}
    outcomes: dict[str, T] = {}
    failures: dict[str, BaseException] = {}
    for name, future in futures.items():
        try:
            outcomes[name] = future.result()
        except BaseException as exc:  # pytest.fail and skip raise BaseExceptions
            failures[name] = exc
    if not failures:
        return outcomes
    at_fault = "the client or the test" if KAFKA in failures else "Odradek"
    report = [f"failed on {' and '.join(failures)}: {at_fault} at fault"]
    for name in (KAFKA, ODRADEK):
        failure = failures.get(name)
        if failure is None:
            report.append(f"--- {name}: passed")
        else:
            text = "".join(traceback.format_exception(failure))
            report.append(f"--- {name}: failed\n{text[-6000:]}")
    raise ScenarioFailed("\n".join(report))
