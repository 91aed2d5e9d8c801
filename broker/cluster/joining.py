"""Why a node cannot take its place in a cluster, in words an operator can act on."""

from __future__ import annotations

from typing import Any

from odradek.broker.settings.cluster_config import ClusterConfig
from odradek.protocol.errors import ErrorCode


class ClusterJoinError(RuntimeError):
    """The node cannot take its place in the cluster; the message says why."""


def check_quorum(cluster: ClusterConfig, address: str, answer: Any) -> None:
    """With controller.quorum.voters set, the controller's voters (its DescribeQuorum
    `answer`) must be the same node ids (their addresses may be advertised otherwise
    than configured)."""
    if answer.error_code != ErrorCode.none:
        raise ClusterJoinError(
            f"the node at {address} is not a controller ({answer.error_code.name})"
        )
    partition = answer.topics[0].partitions[0]
    theirs = sorted(voter.replica_id for voter in partition.current_voters)
    ours = sorted(voter.node_id for voter in cluster.voters)
    if cluster.voters and ours != theirs:
        voters = ", ".join(str(v) for v in cluster.voters)
        raise ClusterJoinError(
            f"controller.quorum.voters ({voters}) disagrees with the controller at "
            f"{address}, whose voters are {theirs}"
        )


_REFUSALS = {
    ErrorCode.duplicate_broker_registration: "another live node is registered with this "
    "node id; give each node a node.id of its own",
    ErrorCode.inconsistent_cluster_id: "the controller belongs to another cluster "
    "(cluster.id differs)",
    ErrorCode.not_controller: "the node asked is not a controller",
}


def refusal(code: ErrorCode) -> str:
    """Why the controller refused a registration."""
    return _REFUSALS.get(code, code.name)
