"""Named listeners, configured as on Kafka: `listeners`, `advertised.listeners`,
`listener.security.protocol.map` and `controller.listener.names`.

    listeners=INTERNAL://:29092,EXTERNAL://:9092
    advertised.listeners=INTERNAL://kafka:29092,EXTERNAL://localhost:9092
    listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT

Each listener is a socket of its own; a client is told, in Metadata and
FindCoordinator, the advertised address of the listener it connected through.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")  # in Kafka's id order


def protocol_named(number: int) -> str:
    """The security protocol of Kafka's id (a registration's listeners); PLAINTEXT for
    one it does not know."""
    return SECURITY_PROTOCOLS[number] if 0 <= number < len(SECURITY_PROTOCOLS) else "PLAINTEXT"


SUPPORTED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
WILDCARDS = ("0.0.0.0", "::")

# NAME://host:port, the host possibly empty or a bracketed IPv6 address. The name is
# anything before the `://`, as Kafka's SocketServerConfigs reads it (`TC-0` say).
_ENDPOINT = re.compile(r"^(.+)://(\[[0-9a-fA-F:.%]*\]|[^:/\[\]]*):(\d+)$")


class ListenerError(ValueError):
    """A listener setting that cannot be used; the message names the setting."""


class ListenError(RuntimeError):
    """A listener's socket could not be opened (port in use, address not here)."""


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str  # "" when the setting leaves it out
    port: int


@dataclass(frozen=True)
class Listener:
    """A socket the broker opens, and the address it gives clients that use it."""

    name: str
    security_protocol: str
    host: str  # to bind; "" or a wildcard for every interface
    port: int  # 0: any free port (advertised as the port actually bound)
    advertised_host: str
    advertised_port: int
    controller: bool = False  # a controller listener (controller.listener.names)


def parse_endpoints(setting: str, text: str) -> list[Endpoint]:
    endpoints: list[Endpoint] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if match is None:
            raise ListenerError(f"{setting}: {item!r} is not NAME://host:port")
        name, host, port = match.group(1).upper(), match.group(2).strip("[]"), int(match.group(3))
        if port > 65535:
            raise ListenerError(f"{setting}: port {port} of {name} is out of range")
        if any(e.name == name for e in endpoints):
            raise ListenerError(f"{setting}: listener name {name} is given twice")
        endpoints.append(Endpoint(name, host, port))
    if not endpoints:
        raise ListenerError(f"{setting}: no listener given")
    return endpoints


def parse_protocol_map(text: str) -> dict[str, str]:
    protocols: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        # the last colon, as Kafka splits it
        name, separator, protocol = item.rpartition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not separator or not name or protocol not in SECURITY_PROTOCOLS:
            raise ListenerError(
                f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL with PROTOCOL "
                f"one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        protocols[name] = protocol
    return protocols


def resolve(
    listeners: str,
    advertised_listeners: str | None,
    protocol_map: str,
    controller_listener_names: str = "",
    advertised_host_name: str | None = None,
    open_controllers: bool = False,
) -> list[Listener]:
    """The listeners to open, in the order given; raises ListenerError naming the setting.
    Controller listeners are left out unless `open_controllers` (a controller of a
    cluster of several nodes: one node of its own has no quorum to serve)."""
    bound = parse_endpoints("listeners", listeners)
    protocols = parse_protocol_map(protocol_map)
    controllers = {n.strip().upper() for n in controller_listener_names.split(",") if n.strip()}
    ports = [e.port for e in bound if e.port != 0]
    if len(ports) != len(set(ports)):
        raise ListenerError(f"listeners: each listener needs a port of its own ({listeners})")
    advertised: dict[str, Endpoint] = {}
    if advertised_listeners:
        for endpoint in parse_endpoints("advertised.listeners", advertised_listeners):
            if endpoint.name not in {e.name for e in bound}:
                raise ListenerError(
                    f"advertised.listeners: {endpoint.name} is not one of the listeners "
                    f"({', '.join(e.name for e in bound)})"
                )
            if endpoint.host in WILDCARDS:
                raise ListenerError(
                    f"advertised.listeners: {endpoint.name} advertises {endpoint.host}, "
                    "which clients cannot connect to; give a host name or address"
                )
            advertised[endpoint.name] = endpoint
    result: list[Listener] = []
    for endpoint in bound:
        if endpoint.name in controllers and not open_controllers:
            continue
        protocol = protocols.get(endpoint.name)
        if protocol is None:
            raise ListenerError(
                f"listener.security.protocol.map: no security protocol for listener {endpoint.name}"
            )
        if protocol not in SUPPORTED_PROTOCOLS:
            raise ListenerError(
                f"listeners: {endpoint.name} uses {protocol}; Odradek serves "
                f"{', '.join(SUPPORTED_PROTOCOLS)} listeners only"
            )
        shown = advertised.get(endpoint.name)
        if shown is not None:
            host, port = shown.host or socket.getfqdn(), shown.port
        else:
            host, port = advertised_host_name or _reachable(endpoint.host), endpoint.port
        result.append(
            Listener(
                endpoint.name,
                protocol,
                endpoint.host,
                endpoint.port,
                host,
                port,
                controller=endpoint.name in controllers,
            )
        )
    if not result:
        raise ListenerError("listeners: every listener is a controller listener")
    return result


def _reachable(bind_host: str) -> str:
    """What to advertise for a listener bound to ``bind_host`` when nothing is configured."""
    if bind_host in WILDCARDS:
        return "127.0.0.1"
    return bind_host or socket.getfqdn()


def ignored_controller_listeners(listeners: str, controller_listener_names: str) -> list[str]:
    names = {n.strip().upper() for n in controller_listener_names.split(",") if n.strip()}
    return [e.name for e in parse_endpoints("listeners", listeners) if e.name in names]
