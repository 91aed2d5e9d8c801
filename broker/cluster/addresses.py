"""Where another node's host name points, for a node's connections to its peers.

A name can take long to fail: on a compose network the name of a container that was
just killed takes 40 s to give up on, and lookups share a few threads (libuv's four).
Were every reconnect to look it up again, lookups of the dead name would take all
those threads, and connections to live nodes, the new leaders among them, would wait
behind them. So each name has at most one lookup in flight, and once a name has
resolved, connections use that answer at once while a new lookup (one per
connection attempt at most) refreshes it in the background.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Coroutine
from typing import Any

Lookup = Callable[[str], Coroutine[Any, Any, str]]


async def lookup_with_the_loop(host: str) -> str:
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    if not infos:
        raise OSError(f"no address for {host}")
    return str(infos[0][4][0])


class Resolver:
    def __init__(self, lookup: Lookup = lookup_with_the_loop) -> None:
        self._lookup = lookup
        self._last_good: dict[str, str] = {}
        self._in_flight: dict[str, asyncio.Task[str]] = {}

    async def resolve(self, host: str) -> str:
        """An address for `host`: the last good one when there is one (a new lookup
        starts if none is running), else the lookup's answer or its error."""
        if _is_address(host):
            return host
        lookup = self._in_flight.get(host)
        loop = asyncio.get_running_loop()
        if lookup is None or lookup.get_loop() is not loop:
            lookup = loop.create_task(self._lookup(host))
            self._in_flight[host] = lookup
            lookup.add_done_callback(lambda done: self._finished(host, done))
        good = self._last_good.get(host)
        if good is not None:
            return good
        return await asyncio.shield(lookup)

    def _finished(self, host: str, lookup: asyncio.Task[str]) -> None:
        if self._in_flight.get(host) is lookup:
            del self._in_flight[host]
        if not lookup.cancelled() and lookup.exception() is None:
            self._last_good[host] = lookup.result()


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


peers = Resolver()  # one per process: every connection to other nodes shares it
