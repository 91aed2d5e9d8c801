"""KRaft settings: which node is standalone, and the combinations Kafka refuses."""

from __future__ import annotations

import pytest

from odradek.broker.settings.cluster_config import (
    ClusterConfig,
    ClusterConfigError,
    Voter,
    cluster_config,
    parse_voters,
)
from odradek.broker.settings.config import BrokerConfig, ConfigError


def kraft(
    roles: str = "broker,controller",
    node_id: int | None = 1,
    voters: str = "1@127.0.0.1:9093",
    bootstrap: str = "",
    controller_names: str = "CONTROLLER",
    listeners: tuple[str, ...] = ("PLAINTEXT", "CONTROLLER"),
) -> ClusterConfig:
    return cluster_config(
        process_roles=roles,
        node_id=node_id,
        voters=voters,
        bootstrap_servers=bootstrap,
        controller_listener_names=controller_names,
        listener_names=list(listeners),
    )


def test_no_roles_is_a_node_of_its_own_whatever_else_is_set() -> None:
    config = kraft(roles="", node_id=None, voters="7@elsewhere:9093")
    assert config.standalone and config.is_broker and not config.is_controller
    assert config.node_id == 0


def test_both_roles_and_the_only_voter_is_a_cluster_others_may_join() -> None:
    config = kraft()
    assert not config.standalone and config.is_broker and config.is_controller
    assert config.voters == (Voter(1, "127.0.0.1", 9093),)
    assert config.controllers() == [("127.0.0.1", 9093)]


def test_a_broker_of_a_cluster_is_not_standalone() -> None:
    config = kraft(roles="broker", node_id=2, listeners=("PLAINTEXT",))
    assert not config.standalone and config.is_broker and not config.is_controller
    bootstrapped = kraft(
        roles="broker", node_id=2, voters="", bootstrap="c1:9093", listeners=("PLAINTEXT",)
    )
    assert bootstrapped.controllers() == [("c1", 9093)]
    controller = kraft(roles="controller", listeners=("CONTROLLER",))
    assert controller.is_controller and not controller.is_broker and not controller.standalone


def test_voters_parse_with_ipv6_hosts() -> None:
    assert parse_voters("1@[::1]:9093") == (Voter(1, "::1", 9093),)
    assert parse_voters(" 3@c:1 , ") == (Voter(3, "c", 1),)


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"roles": "broker,zookeeper"}, "'zookeeper' is not a role"),
        ({"roles": "broker,broker"}, "a role is named twice"),
        ({"node_id": None}, "node.id: required"),
        ({"node_id": -1}, "must not be negative"),
        ({"voters": ""}, "must name the controllers"),
        ({"voters": "1@a"}, "'a' is not host:port"),
        ({"voters": "x@a:1"}, "is not id@host:port"),
        ({"voters": "1@a:70000"}, "port 70000 is out of range"),
        ({"voters": "1@a:1,1@b:1"}, "a node id is named twice"),
        ({"controller_names": ""}, "controller.listener.names: required"),
        ({"node_id": 2}, "a controller must be one of controller.quorum.voters"),
        ({"listeners": ("PLAINTEXT",)}, "a controller needs a listener named in"),
        ({"roles": "broker"}, "must not be one of controller.quorum.voters"),
        (
            {"roles": "broker", "node_id": 2},
            "a node with only the broker role must not open a controller listener",
        ),
        ({"roles": "controller"}, "opens only controller listeners, not PLAINTEXT"),
    ],
)
def test_settings_kafka_refuses_are_refused_by_name(
    settings: dict[str, object], words: str
) -> None:
    with pytest.raises(ClusterConfigError, match=words):
        kraft(**settings)  # type: ignore[arg-type]


def test_broker_config_reads_the_kraft_settings_and_needs_a_node_id() -> None:
    config = BrokerConfig()
    config.apply(
        {
            "process.roles": "broker",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
        }
    )
    with pytest.raises(ConfigError, match="node.id: required"):
        config.cluster()
    config.apply({"node.id": "4"})
    cluster = config.cluster()
    assert cluster.node_id == 4 and not cluster.standalone
    assert BrokerConfig().cluster().standalone  # the defaults: a node of its own


def test_a_controller_listener_other_than_plaintext_is_refused_for_now() -> None:
    config = BrokerConfig()
    config.apply(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:9093",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
        }
    )
    with pytest.raises(ConfigError, match="controller listener CONTROLLER uses SSL"):
        config.cluster()
    config.apply({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"})
    assert config.cluster().is_controller


def test_the_inter_broker_listener_is_named_and_plaintext_for_now() -> None:
    config = BrokerConfig()
    config.apply(
        {
            "process.roles": "broker",
            "node.id": "2",
            "listeners": "SECURE://127.0.0.1:9094,INTERNAL://127.0.0.1:19092",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "listener.security.protocol.map": (
                "SECURE:SASL_SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
        }
    )
    with pytest.raises(ConfigError, match="inter-broker listener SECURE uses SASL_SSL"):
        config.cluster()  # the first listener, when none is named PLAINTEXT
    config.apply({"inter.broker.listener.name": "elsewhere"})
    with pytest.raises(ConfigError, match="not one of this broker's listeners"):
        config.cluster()
    config.apply({"inter.broker.listener.name": "internal"})
    assert config.inter_broker_listener(config.cluster()) == "INTERNAL"


def test_a_quorum_of_three_voters_is_read() -> None:
    config = kraft(voters="1@a:9093,2@b:9093,3@c:9093", node_id=2)
    assert [v.node_id for v in config.voters] == [1, 2, 3]
    assert config.controllers() == [("a", 9093), ("b", 9093), ("c", 9093)]
