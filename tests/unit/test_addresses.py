"""Peers' names: one lookup at a time per name, and the last good answer used at once
while a slow lookup runs (a killed container's name takes 40 s to fail)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from odradek.broker.cluster.addresses import Resolver, lookup_with_the_loop


class Names:
    """Lookups that answer when the test says so, counted per name."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.answers: dict[str, asyncio.Future[str]] = {}

    async def lookup(self, host: str) -> str:
        self.asked.append(host)
        self.answers[host] = asyncio.get_running_loop().create_future()
        return await self.answers[host]

    async def asked_for(self, *hosts: str) -> None:
        for _ in range(10):  # a lookup starts a loop turn or two after it is asked for
            if all(host in self.answers and not self.answers[host].done() for host in hosts):
                return
            await asyncio.sleep(0)
        raise AssertionError(f"no lookup of {hosts}: {self.asked}")


async def test_callers_of_one_name_share_one_lookup() -> None:
    names = Names()
    resolver = Resolver(names.lookup)
    callers = [asyncio.create_task(resolver.resolve("kafka-1")) for _ in range(5)]
    await names.asked_for("kafka-1")
    assert names.asked == ["kafka-1"]
    names.answers["kafka-1"].set_result("10.0.0.2")
    assert await asyncio.gather(*callers) == ["10.0.0.2"] * 5


async def test_a_name_that_resolved_is_answered_at_once_while_a_slow_lookup_runs() -> None:
    names = Names()
    resolver = Resolver(names.lookup)
    first = asyncio.create_task(resolver.resolve("kafka-1"))
    await names.asked_for("kafka-1")
    names.answers["kafka-1"].set_result("10.0.0.2")
    assert await first == "10.0.0.2"
    # The container is gone: its name's next lookup hangs, then fails.
    for _ in range(3):
        assert await asyncio.wait_for(resolver.resolve("kafka-1"), 0.1) == "10.0.0.2"
    await names.asked_for("kafka-1")
    assert names.asked == ["kafka-1", "kafka-1"]  # one lookup in flight, not three
    names.answers["kafka-1"].set_exception(socket.gaierror(-3, "Temporary failure"))
    await asyncio.sleep(0)
    assert await asyncio.wait_for(resolver.resolve("kafka-1"), 0.1) == "10.0.0.2"


async def test_a_slow_name_holds_up_no_other() -> None:
    names = Names()
    resolver = Resolver(names.lookup)
    slow = asyncio.create_task(resolver.resolve("kafka-1"))
    other = asyncio.create_task(resolver.resolve("kafka-2"))
    await names.asked_for("kafka-1", "kafka-2")
    names.answers["kafka-2"].set_result("10.0.0.3")
    assert await other == "10.0.0.3"
    assert not slow.done()
    names.answers["kafka-1"].set_exception(socket.gaierror(-2, "Name or service not known"))
    with pytest.raises(socket.gaierror):
        await slow


async def test_addresses_are_not_looked_up_and_names_are() -> None:
    names = Names()
    resolver = Resolver(names.lookup)
    assert await resolver.resolve("127.0.0.1") == "127.0.0.1"
    assert await resolver.resolve("::1") == "::1"
    assert names.asked == []
    assert await Resolver(lookup_with_the_loop).resolve("localhost") in ("127.0.0.1", "::1")
