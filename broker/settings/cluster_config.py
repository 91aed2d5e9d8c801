"""Where this node stands in a cluster, read from Kafka's KRaft settings.

- No `process.roles`: a node of its own, as Odradek has always run (any quorum
  settings given beside are reported as unused).
- `process.roles`: `broker`, `controller`, or both. Then `node.id` is required, the
  controllers are named by `controller.quorum.voters` (`id@host:port,...`) or found
  through `controller.quorum.bootstrap.servers` (`host:port,...`), and
  `controller.listener.names` says which listener the controllers serve.
- The rules are Kafka's own: a controller is one of the voters and opens a
  controller listener; a broker-only node is not a voter and opens none.
- A node with both roles that is the only voter (the usual single-node compose file)
  is a cluster that other brokers may join: it opens its controller listener and
  registers with itself; alone, its clients see what they saw of a node of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

BROKER = "broker"
CONTROLLER = "controller"
ROLES = (BROKER, CONTROLLER)


class ClusterConfigError(ValueError):
    """A KRaft setting that cannot be used; the message names the setting."""


@dataclass(frozen=True)
class Voter:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.node_id}@{self.host}:{self.port}"


@dataclass(frozen=True)
class ClusterConfig:
    roles: frozenset[str]  # empty: no process.roles, a node of its own
    node_id: int
    voters: tuple[Voter, ...] = ()
    bootstrap_servers: tuple[tuple[str, int], ...] = ()
    controller_listener_names: tuple[str, ...] = ()

    @property
    def is_broker(self) -> bool:
        return not self.roles or BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def standalone(self) -> bool:
        """No process.roles: a node of its own, with no controller listener to serve."""
        return not self.roles

    def controllers(self) -> list[tuple[str, int]]:
        """Where to reach the controllers: the voters, else the bootstrap servers."""
        if self.voters:
            return [(v.host, v.port) for v in self.voters]
        return list(self.bootstrap_servers)


def parse_roles(raw: str) -> frozenset[str]:
    names = [part.strip().lower() for part in raw.split(",") if part.strip()]
    for name in names:
        if name not in ROLES:
            raise ClusterConfigError(
                f"process.roles={raw!r}: {name!r} is not a role (broker, controller)"
            )
    if len(names) != len(set(names)):
        raise ClusterConfigError(f"process.roles={raw!r}: a role is named twice")
    return frozenset(names)


def _host_port(setting: str, raw: str, entry: str) -> tuple[str, int]:
    host, separator, port = entry.rpartition(":")
    host = host.strip().removeprefix("[").removesuffix("]")
    if not separator or not host or not port.strip().isdigit():
        raise ClusterConfigError(f"{setting}={raw!r}: {entry!r} is not host:port")
    number = int(port)
    if not 0 < number < 65536:
        raise ClusterConfigError(f"{setting}={raw!r}: port {number} is out of range")
    return host, number


def parse_voters(raw: str) -> tuple[Voter, ...]:
    """`controller.quorum.voters`: `id@host:port` entries, comma-separated."""
    voters: list[Voter] = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        node, separator, address = entry.partition("@")
        if not separator or not node.strip().isdigit():
            raise ClusterConfigError(
                f"controller.quorum.voters={raw!r}: {entry!r} is not id@host:port"
            )
        host, port = _host_port("controller.quorum.voters", raw, address)
        voters.append(Voter(int(node), host, port))
    ids = [v.node_id for v in voters]
    if len(ids) != len(set(ids)):
        raise ClusterConfigError(f"controller.quorum.voters={raw!r}: a node id is named twice")
    return tuple(voters)


def parse_bootstrap_servers(raw: str) -> tuple[tuple[str, int], ...]:
    """`controller.quorum.bootstrap.servers`: `host:port` entries, comma-separated."""
    setting = "controller.quorum.bootstrap.servers"
    return tuple(
        _host_port(setting, raw, entry.strip()) for entry in raw.split(",") if entry.strip()
    )


def cluster_config(
    *,
    process_roles: str,
    node_id: int | None,
    voters: str,
    bootstrap_servers: str,
    controller_listener_names: str,
    listener_names: list[str],
) -> ClusterConfig:
    """Check the KRaft settings against each other and against the listeners'
    names; `node_id` is None when neither node.id nor broker.id was given."""
    roles = parse_roles(process_roles)
    controller_names = tuple(
        name.strip().upper() for name in controller_listener_names.split(",") if name.strip()
    )
    if not roles:
        return ClusterConfig(frozenset(), node_id or 0, (), (), controller_names)
    if node_id is None:
        raise ClusterConfigError("node.id: required when process.roles is set")
    if node_id < 0:
        raise ClusterConfigError(f"node.id={node_id}: must not be negative")
    parsed_voters = parse_voters(voters)
    bootstrap = parse_bootstrap_servers(bootstrap_servers)
    if not parsed_voters and not bootstrap:
        raise ClusterConfigError(
            "controller.quorum.voters or controller.quorum.bootstrap.servers: one of them "
            "must name the controllers when process.roles is set"
        )
    if not controller_names:
        raise ClusterConfigError("controller.listener.names: required when process.roles is set")
    voter_ids = [v.node_id for v in parsed_voters]
    opened = {name.upper() for name in listener_names}
    if CONTROLLER in roles:
        if parsed_voters and node_id not in voter_ids:
            raise ClusterConfigError(
                f"node.id={node_id}: a controller must be one of controller.quorum.voters "
                f"({voters})"
            )
        if not opened & set(controller_names):
            raise ClusterConfigError(
                f"listeners: a controller needs a listener named in controller.listener.names "
                f"({', '.join(controller_names)})"
            )
    else:
        if node_id in voter_ids:
            raise ClusterConfigError(
                f"node.id={node_id}: a node with only the broker role must not be one of "
                f"controller.quorum.voters ({voters})"
            )
        if opened & set(controller_names):
            raise ClusterConfigError(
                "listeners: a node with only the broker role must not open a controller "
                f"listener ({', '.join(sorted(opened & set(controller_names)))})"
            )
    if roles == frozenset({CONTROLLER}) and opened - set(controller_names):
        raise ClusterConfigError(
            "listeners: a node with only the controller role opens only controller "
            f"listeners, not {', '.join(sorted(opened - set(controller_names)))}"
        )
    return ClusterConfig(roles, node_id, parsed_voters, bootstrap, controller_names)
