"""Where a broker's settings come from, as Kafka's are written: a server.properties file
(Java properties), or environment variables named as the apache/kafka image names them.
Both give {Kafka name: value as written}; BrokerConfig.apply (config.py) reads them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# KAFKA_* variables the apache/kafka image reads as something other than a setting
_NOT_SETTINGS = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HEAP_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JMX_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_JMX_HOSTNAME",
    }
)
# Confluent's images give KAFKA_REST_* to their REST Proxy, never to the broker
# (Testcontainers' Go module sets KAFKA_REST_BOOTSTRAP_SERVERS)
_NOT_SETTINGS_PREFIX = "KAFKA_REST_"


# What --environment listens on when no KAFKA_* variable is set, as the apache/kafka
# image does: every interface, clients on the host told localhost.
ENVIRONMENT_DEFAULTS = {
    "listeners": "PLAINTEXT://:9092",
    "advertised.listeners": "PLAINTEXT://localhost:9092",
}


def settings_from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """Settings from environment variables named as the apache/kafka image names them:
    KAFKA_ and the setting in capitals, `.` written `_`, `_` written `__` and `-`
    written `___` (KAFKA_LISTENER_SECURITY_PROTOCOL_MAP -> listener.security.protocol.map).
    CLUSTER_ID gives cluster.id."""
    settings: dict[str, str] = {}
    for variable, value in environ.items():
        if not variable.startswith("KAFKA_") or variable in _NOT_SETTINGS:
            continue
        if variable.startswith(_NOT_SETTINGS_PREFIX):
            continue
        name = variable[len("KAFKA_") :].lower().replace("_", ".")
        settings[name.replace("...", "-").replace("..", "_")] = value
    if not settings:
        settings.update(ENVIRONMENT_DEFAULTS)
    if "CLUSTER_ID" in environ and "cluster.id" not in settings:
        settings["cluster.id"] = environ["CLUSTER_ID"]
    return settings


def read_properties(path: Path) -> dict[str, str]:
    """Parse a Java .properties file (the subset server.properties uses)."""
    settings: dict[str, str] = {}
    for line in _logical_lines(path.read_text()):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        for separator in ("=", ":"):
            if separator in line:
                key, value = line.split(separator, 1)
                settings[key.strip()] = value.strip()
                break
    return settings


def _logical_lines(text: str) -> list[str]:
    """Java properties lines: a line ending in an odd number of backslashes goes on
    with the next one, whose leading white space is dropped (JAAS configs are
    usually written over several lines)."""
    lines: list[str] = []
    parts: list[str] = []
    for natural in text.splitlines():
        line = natural.lstrip()
        if not parts and line.startswith(("#", "!")):
            continue  # a comment never continues, whatever it ends with
        if (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            parts.append(line[:-1])
            continue
        lines.append("".join([*parts, line]))
        parts = []
    if parts:
        lines.append("".join(parts))
    return lines
