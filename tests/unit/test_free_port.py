"""free_port hands out ports below the kernel's ephemeral range, where no outgoing
connection can take one between the pick and the broker's bind."""

from __future__ import annotations

import socket

from odradek.broker.testing.broker import free_port


def _ephemeral_low() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        return int(f.read().split()[0])


def test_ports_lie_below_the_ephemeral_range_and_differ() -> None:
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == 20
    assert all(10000 <= port < _ephemeral_low() for port in ports)


def test_a_port_in_use_is_passed_over() -> None:
    taken = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", taken + 1))
        listener.listen()
        assert free_port() != taken + 1
