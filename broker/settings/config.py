"""Broker configuration, named as in Kafka's server.properties.

A setting the broker reads is declared once, on the BrokerConfig field it sets: its
Kafka name, type, default, checks and documentation (setting.py). BrokerConfig is made
of its own fields (node, cluster, listeners, connections, quotas, delegation tokens) and
those of LogSettings (topics and their logs, log_settings.py) and CoordinatorSettings
(groups, offsets, transactions, coordinator_settings.py). The settings broker/security
reads are named, with their documentation, in SECURITY_DOCS. A setting Kafka has but
Odradek does not use (a thread count, a replication quota: nothing Odradek does;
kafka_settings.py) is accepted and reported once in the log; any other name, or a value
that does not parse, is a ConfigError naming the setting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from odradek.broker.settings.cluster_config import ClusterConfig, ClusterConfigError, cluster_config
from odradek.broker.settings.coordinator_settings import CoordinatorSettings
from odradek.broker.settings.kafka_settings import (
    NOT_READ,
    NOT_READ_DOC,
    OTHER_DISTRIBUTION_PREFIXES,
)
from odradek.broker.settings.listeners import (
    DEFAULT_LISTENERS,
    DEFAULT_PROTOCOL_MAP,
    Listener,
    ListenerError,
    parse_endpoints,
    parse_protocol_map,
    resolve,
)
from odradek.broker.settings.log_settings import LogSettings
from odradek.broker.settings.quorum_settings import QuorumSettings
from odradek.broker.settings.setting import (
    INT,
    LIST,
    LONG,
    PASSWORD,
    STRING,
    ConfigError,
    Setting,
    at_least,
    declared_setting,
    log_directories,
    none_if_empty,
    setting,
)

# Per-listener forms of a setting: listener.name.<listener>.<setting> (a listener name
# may hold any character but the dot here, `-` say, as Kafka's listener names may)
_PER_LISTENER = re.compile(r"^listener\.name\.[^.]+\.(.+)$")
# Per-mechanism SASL settings: [listener.name.<listener>.]<mechanism>.sasl.jaas.config
_PER_MECHANISM = re.compile(r"^[a-z0-9-]+\.(sasl\..+)$")
# The settings broker/security reads from `raw`, per listener (so not reported as
# unused; the JAAS config holds passwords, which must not reach the log), with what each
# does: their documentation, as a declared setting's is its declaration's
SECURITY_DOCS = {
    "sasl.enabled.mechanisms": (
        "The SASL mechanisms a SASL listener accepts; Odradek serves PLAIN, "
        "SCRAM-SHA-256 and SCRAM-SHA-512 and refuses to start with any other."
    ),
    "sasl.jaas.config": (
        "The JAAS login configuration of a SASL listener; its PlainLoginModule entry "
        'lists the users PLAIN accepts (user_<name>="<password>").'
    ),
    "sasl.server.max.receive.size": (
        "The largest frame, in bytes, a client may send before it has authenticated; a "
        "larger one closes the connection."
    ),
    "connection.failed.authentication.delay.ms": (
        "How long, in milliseconds, the broker waits after refusing an authentication "
        "before it closes the connection."
    ),
    "authorizer.class.name": (
        "The authorizer that checks ACLs: Kafka's StandardAuthorizer or AclAuthorizer "
        "class name turns Odradek's ACL authorizer on; empty, every request is allowed."
    ),
    "super.users": "Principals (User:name, separated by semicolons) that every ACL check allows.",
    "allow.everyone.if.no.acl.found": (
        "Whether a resource that no ACL names is open to everyone (true) or to super "
        "users only (false)."
    ),
}
READ_BY_SECURITY = frozenset(SECURITY_DOCS)


@dataclass
class BrokerConfig(LogSettings, CoordinatorSettings, QuorumSettings):
    """What the broker runs with. A field that a Kafka setting sets declares it with
    `setting(...)`; cli.py sets metrics_port and enable_faults, and log.dirs from
    --data-dir."""

    log_dirs: str = setting(
        "log.dirs",
        LIST,
        "data",
        log_directories,
        doc=(
            "The directories the partitions' logs are kept in, separated by commas (the "
            "command's --data-dir says the same). A new partition goes to the one holding "
            "the fewest; the first also keeps the broker's own files. Not set, log.dir is "
            "used, else ./data."
        ),
    )
    log_dir: str | None = setting(
        "log.dir",
        LIST,
        None,
        none_if_empty,
        doc="The log directories, as log.dirs names them; read only where log.dirs is not set.",
    )
    metrics_port: int | None = None
    enable_faults: bool = False  # tests may inject faults (broker/faults/); never in production
    # a new dynamic quorum's first voters, as `kafka-storage format` takes them: "" (by
    # controller.quorum.bootstrap.servers), "standalone", "none", or "id@host:port:dir,..."
    initial_controllers: str = ""
    node_id: int = setting(
        "node.id",
        INT,
        0,
        alias="broker.id",
        doc=(
            "This node's id, which names it to clients, in a cluster and as a BROKER config "
            "resource; broker.id is another name for it."
        ),
    )
    cluster_id: str = setting(
        "cluster.id",
        STRING,
        "odradek-cluster",
        doc=(
            "The cluster id clients are told. Kafka keeps it in its formatted storage; "
            "Odradek takes it from this setting (or CLUSTER_ID in the environment)."
        ),
    )
    listeners: str = setting(
        "listeners",
        LIST,
        DEFAULT_LISTENERS,
        doc=(
            "The addresses to listen on, as a list of NAME://host:port; an empty host listens "
            "on every interface."
        ),
    )
    advertised_listeners: str | None = setting(
        "advertised.listeners",
        LIST,
        None,
        doc=(
            "The address of each listener that clients are told to connect to "
            "(NAME://host:port); a listener not named here advertises the host and port it "
            "listens on."
        ),
    )
    listener_security_protocol_map: str = setting(
        "listener.security.protocol.map",
        STRING,
        DEFAULT_PROTOCOL_MAP,
        doc=(
            "Which security protocol each listener name uses (NAME:PROTOCOL pairs). Odradek "
            "serves PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL."
        ),
    )
    controller_listener_names: str = setting(
        "controller.listener.names",
        LIST,
        "",
        doc="The listeners that serve the cluster's controller; they are not offered to clients.",
    )
    process_roles: str = setting(
        "process.roles",
        LIST,
        "",
        doc=(
            "This node's part in a cluster: broker, controller or both. Unset, Odradek runs "
            "as a node of its own, with no controller to reach."
        ),
    )
    controller_quorum_voters: str = setting(
        "controller.quorum.voters",
        LIST,
        "",
        doc=(
            "The controllers of the cluster, as id@host:port entries; one of this or "
            "controller.quorum.bootstrap.servers names them when process.roles is set."
        ),
    )
    controller_quorum_bootstrap_servers: str = setting(
        "controller.quorum.bootstrap.servers",
        LIST,
        "",
        doc=(
            "Addresses (host:port) through which a node finds the cluster's controllers when "
            "controller.quorum.voters does not list them."
        ),
    )
    broker_session_timeout_ms: int = setting(
        "broker.session.timeout.ms",
        INT,
        9000,
        doc=(
            "How long, in milliseconds, the controller keeps a broker registered without a "
            "heartbeat from it before fencing it."
        ),
    )
    broker_heartbeat_interval_ms: int = setting(
        "broker.heartbeat.interval.ms",
        INT,
        2000,
        doc=(
            "How often, in milliseconds, a broker of a cluster sends its heartbeat to the "
            "controller."
        ),
    )
    initial_broker_registration_timeout_ms: int = setting(
        "initial.broker.registration.timeout.ms",
        INT,
        60000,
        doc=(
            "How long, in milliseconds, a starting broker of a cluster waits to be registered "
            "and admitted by the controller before it gives up."
        ),
    )
    advertised_host: str | None = setting(
        "advertised.host.name",
        STRING,
        None,
        doc=(
            "An older way to name the host clients are told: used for every listener that "
            "advertised.listeners does not cover."
        ),
    )
    socket_request_max_bytes: int = setting(
        "socket.request.max.bytes",
        INT,
        104857600,
        doc=(
            "The largest request, in bytes, the broker reads; a larger one closes the connection."
        ),
    )
    inter_broker_listener_name: str = setting(
        "inter.broker.listener.name",
        STRING,
        "",
        doc=(
            "The listener that brokers of a cluster replicate through; unset, the one named "
            "PLAINTEXT, else the first. It must be a PLAINTEXT listener."
        ),
    )
    quota_window_num: int = setting(
        "quota.window.num",
        INT,
        11,
        at_least(1),
        doc=(
            "How many samples a client's produce, fetch and request-time rates are measured "
            "over, for client quotas."
        ),
    )
    quota_window_size_seconds: int = setting(
        "quota.window.size.seconds",
        INT,
        1,
        at_least(1),
        doc="How long, in seconds, each sample of a client quota's rate lasts.",
    )
    controller_quota_window_num: int = setting(
        "controller.quota.window.num",
        INT,
        11,
        at_least(1),
        doc=(
            "How many windows' worth of partition creations and deletions the "
            "controller_mutation_rate quota lets a client make at once."
        ),
    )
    controller_quota_window_size_seconds: int = setting(
        "controller.quota.window.size.seconds",
        INT,
        1,
        at_least(1),
        doc="How long, in seconds, each window of the controller_mutation_rate quota lasts.",
    )
    max_request_partition_size_limit: int = setting(
        "max.request.partition.size.limit",
        INT,
        2000,
        doc=(
            "The most partitions one DescribeTopicPartitions answer lists; a client that asks "
            "for more gets a cursor to continue from."
        ),
    )
    telemetry_max_bytes: int = setting(
        "telemetry.max.bytes",
        INT,
        1048576,
        doc=(
            "The largest metrics push, in bytes, a client may send with PushTelemetry; "
            "clients are told it when they ask for their subscription."
        ),
    )
    delegation_token_secret_key: str | None = setting(
        "delegation.token.secret.key",
        PASSWORD,
        None,
        none_if_empty,
        doc=(
            "The secret delegation tokens are signed with; unset or empty, the broker issues "
            "no delegation tokens."
        ),
    )
    delegation_token_max_lifetime_ms: int = setting(
        "delegation.token.max.lifetime.ms",
        LONG,
        604800000,
        doc=(
            "How long, in milliseconds, a delegation token may live at most, however often it "
            "is renewed."
        ),
    )
    delegation_token_expiry_time_ms: int = setting(
        "delegation.token.expiry.time.ms",
        LONG,
        86400000,
        doc=(
            "How long, in milliseconds, a delegation token stays valid after its creation or "
            "renewal unless the request asks for less; never past its maximum lifetime."
        ),
    )
    delegation_token_expiry_check_interval_ms: int = setting(
        "delegation.token.expiry.check.interval.ms",
        LONG,
        3600000,
        doc="How often, in milliseconds, expired delegation tokens are looked for and removed.",
    )
    max_connections: int = setting(
        "max.connections",
        INT,
        2147483647,
        doc=(
            "How many client connections the broker holds at once, over all listeners; "
            "listener.name.<listener>.max.connections limits one listener."
        ),
    )
    max_connections_per_ip: int = setting(
        "max.connections.per.ip",
        INT,
        2147483647,
        doc="How many connections one client address may hold at once.",
    )
    max_connections_per_ip_overrides: str = setting(
        "max.connections.per.ip.overrides",
        STRING,
        "",
        doc=(
            "Other limits for some addresses or host names, as host:count pairs separated by "
            "commas; they win over max.connections.per.ip."
        ),
    )
    # Kafka's default is 50, for an acceptor thread that does nothing else; one event
    # loop that also serves requests accepts in bursts, so clients that connect many at
    # once would overflow 50 and wait for SYN retries (a second each).
    socket_listen_backlog_size: int = setting(
        "socket.listen.backlog.size",
        INT,
        1024,
        doc=(
            "How many connections may wait to be accepted on a listening socket. Odradek "
            "defaults to 1024, where Kafka has 50, since one event loop both accepts and "
            "serves."
        ),
    )
    connections_max_idle_ms: int = setting(
        "connections.max.idle.ms",
        LONG,
        600000,
        doc=(
            "How long, in milliseconds, a connection may stay silent before the broker closes it."
        ),
    )
    # Kafka settings given but not used here, with their values
    unused: dict[str, str] = field(default_factory=dict)
    # every setting as given (security settings are read from here, per listener)
    raw: dict[str, str] = field(default_factory=dict)

    def apply(self, settings: Mapping[str, str]) -> None:
        """Set values given by Kafka name; raises ConfigError for unknown names and
        values that do not parse or are out of bounds."""
        for name, raw in settings.items():
            self.raw[name] = raw
            found = SETTINGS.get(name)
            if found is None:
                if not is_kafka_setting(name):
                    raise ConfigError(f"{name}: not a Kafka broker setting")
                if _base_setting(name) not in READ_BY_SECURITY:
                    self.unused[name] = raw
                continue
            attribute, declared = found
            try:
                setattr(self, attribute, declared.parse(raw))
            except ValueError as exc:
                raise ConfigError(f"{name}={raw!r}: {exc}") from None
        if "log.dirs" not in self.raw and self.log_dir:
            self.log_dirs = self.log_dir  # Kafka's older name, read where log.dirs is not set
        for attribute, declared in _DECLARED:
            value = getattr(self, attribute)
            for check in declared.checks:
                value = check(declared.name, value)
            setattr(self, attribute, value)
        for low, high in ORDERED:
            if getattr(self, SETTINGS[low][0]) > getattr(self, SETTINGS[high][0]):
                raise ConfigError(f"{low} must not be greater than {high}")

    def listener_setting(self, listener: str, name: str) -> str | None:
        """A setting as one listener sees it: `listener.name.<listener>.<name>` wins
        over `<name>` (Kafka's per-listener prefixes)."""
        own = self.raw.get(f"listener.name.{listener.lower()}.{name}")
        return own if own is not None else self.raw.get(name)

    def directories(self) -> tuple[Path, ...]:
        """Every log directory (log.dirs), the first (data_dir) first."""
        return tuple(Path(p) for p in self.log_dirs.split(","))

    @property
    def data_dir(self) -> Path:
        """The first log directory, which keeps the broker's own files."""
        return self.directories()[0]

    def resolved_listeners(self) -> list[Listener]:
        cluster = self.cluster()
        try:
            return resolve(
                self.listeners,
                self.advertised_listeners,
                self.listener_security_protocol_map,
                self.controller_listener_names,
                self.advertised_host,
                open_controllers=cluster.is_controller and not cluster.standalone,
            )
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None

    def cluster(self) -> ClusterConfig:
        """The node's KRaft settings, checked against each other and the listeners."""
        given = "node.id" in self.raw or "broker.id" in self.raw
        try:
            cluster = cluster_config(
                process_roles=self.process_roles,
                node_id=self.node_id if given else None,
                voters=self.controller_quorum_voters,
                bootstrap_servers=self.controller_quorum_bootstrap_servers,
                controller_listener_names=self.controller_listener_names,
                listener_names=[e.name for e in parse_endpoints("listeners", self.listeners)],
            )
        except (ClusterConfigError, ListenerError) as exc:
            raise ConfigError(str(exc)) from None
        if not cluster.standalone:
            self._plaintext_controllers(cluster)
            if cluster.is_broker:
                self.inter_broker_listener(cluster)
        return cluster

    def inter_broker_listener(self, cluster: ClusterConfig) -> str:
        """What followers fetch through: inter.broker.listener.name, else the listener
        named PLAINTEXT, else the first broker listener (PLAINTEXT only, so far)."""
        endpoints = parse_endpoints("listeners", self.listeners)
        names = [e.name for e in endpoints if e.name not in cluster.controller_listener_names]
        configured = self.inter_broker_listener_name.upper()
        name = configured or ("PLAINTEXT" if "PLAINTEXT" in names or not names else names[0])
        if configured and name not in names:
            raise ConfigError(
                f"inter.broker.listener.name={name}: not one of this broker's listeners "
                f"({', '.join(names)})"
            )
        try:
            protocol = parse_protocol_map(self.listener_security_protocol_map).get(name, name)
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None
        if protocol != "PLAINTEXT":
            raise ConfigError(
                f"inter-broker listener {name} uses {protocol}; brokers replicate over "
                "PLAINTEXT only so far (set inter.broker.listener.name)"
            )
        return name

    def _plaintext_controllers(self, cluster: ClusterConfig) -> None:
        """Brokers reach the controller in PLAINTEXT only, so far."""
        try:
            protocols = parse_protocol_map(self.listener_security_protocol_map)
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None
        for name in cluster.controller_listener_names:
            protocol = protocols.get(name, "PLAINTEXT")
            if protocol != "PLAINTEXT":
                raise ConfigError(
                    f"listener.security.protocol.map: controller listener {name} uses "
                    f"{protocol}; brokers reach the controller in PLAINTEXT only so far"
                )


# (attribute, declaration) of every field that a Kafka setting sets, in field order
_DECLARED = [
    (f.name, declared)
    for f in fields(BrokerConfig)
    if (declared := declared_setting(f.metadata)) is not None
]
# Kafka name -> (attribute, declaration), for every setting the broker reads
SETTINGS: dict[str, tuple[str, Setting]] = {
    name: (attribute, declared) for attribute, declared in _DECLARED for name in declared.names
}
# Every Kafka broker setting: the ones read here, by broker/security, and the others
KAFKA_BROKER_SETTINGS = frozenset(SETTINGS) | READ_BY_SECURITY | NOT_READ


def documentation(name: str) -> str:
    """What a Kafka broker setting does in Odradek, as DescribeConfigs tells it: a declared
    setting's doc, a security setting's, or the one sentence of all the settings Odradek
    does not read. KeyError for a name that is not a Kafka broker setting."""
    found = SETTINGS.get(name)
    if found is not None:
        return found[1].doc
    if name in NOT_READ:
        return NOT_READ_DOC
    return SECURITY_DOCS[name]


# Settings checked against each other, as Kafka 4.4 checks them: low <= high
ORDERED = (
    ("group.streams.min.assignment.interval.ms", "group.streams.assignment.interval.ms"),
    ("group.streams.assignment.interval.ms", "group.streams.max.assignment.interval.ms"),
    ("group.streams.min.task.offset.interval.ms", "group.streams.task.offset.interval.ms"),
    ("group.streams.num.warmup.replicas", "group.streams.max.warmup.replicas"),
)


def _base_setting(name: str) -> str:
    """The setting without its listener and mechanism prefixes."""
    per_listener = _PER_LISTENER.match(name)
    if per_listener is not None:
        name = per_listener.group(1)
    per_mechanism = _PER_MECHANISM.match(name)
    return per_mechanism.group(1) if per_mechanism is not None else name


def is_kafka_setting(name: str) -> bool:
    if name in KAFKA_BROKER_SETTINGS:
        return True
    if name.startswith(OTHER_DISTRIBUTION_PREFIXES):
        return True
    per_listener = _PER_LISTENER.match(name)
    if per_listener is not None:
        return is_kafka_setting(per_listener.group(1))
    per_mechanism = _PER_MECHANISM.match(name)
    return per_mechanism is not None and per_mechanism.group(1) in KAFKA_BROKER_SETTINGS
