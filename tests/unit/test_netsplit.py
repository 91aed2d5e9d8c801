"""The test proxies of odradek.testing's Netsplit, against an echo server: bytes pass
both ways, a blackhole holds them (and lets them through on heal), a reset kills the
connections and refuses new ones until heal."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from odradek.broker.testing.netsplit import Link, Netsplit


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def link() -> Iterator[Link]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with Netsplit() as links:
        yield links.add(1, 2, ("127.0.0.1", server.server_address[1]))
    server.shutdown()
    server.server_close()


def connect(link: Link) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", link.port), timeout=2)
    sock.settimeout(0.5)
    return sock


def echoed(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    return sock.recv(4096)


def test_bytes_pass_both_ways(link: Link) -> None:
    with connect(link) as sock:
        assert echoed(sock, b"ping") == b"ping"
    assert link.connections == 1 and link.forwarded == 8


def test_a_blackhole_holds_the_bytes_and_heal_lets_them_through(link: Link) -> None:
    with connect(link) as old:
        assert echoed(old, b"a") == b"a"
        link.cut()
        assert link.is_cut
        with pytest.raises(TimeoutError):
            echoed(old, b"held")
        fresh = connect(link)  # accepted, but nothing goes anywhere
        with pytest.raises(TimeoutError):
            echoed(fresh, b"new")
        link.heal()
        old.settimeout(2)
        fresh.settimeout(2)
        assert old.recv(4096) == b"held"  # the connections lived through it
        assert fresh.recv(4096) == b"new"
        fresh.close()


def test_a_reset_closes_the_connections_and_refuses_new_ones(link: Link) -> None:
    with connect(link) as old:
        assert echoed(old, b"a") == b"a"
        link.cut(mode="reset")
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            echoed(old, b"b")
    with pytest.raises((ConnectionResetError, BrokenPipeError)), connect(link) as fresh:
        # (the reset may come during the handshake, or after the first send went out)
        echoed(fresh, b"c")
        echoed(fresh, b"c")
    link.heal()
    with connect(link) as sock:
        assert echoed(sock, b"back") == b"back"
