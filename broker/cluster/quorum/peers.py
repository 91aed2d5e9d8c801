"""A controller's connections to the other controllers: to each voter at the endpoint
its voter set names, and, for a controller that is not a voter (an observer), to the
leader it found by asking the bootstrap servers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from odradek.broker.cluster.node_client import NodeClient, NodeUnreachable
from odradek.broker.cluster.quorum import requests
from odradek.broker.cluster.quorum.rules import LogEnd

if TYPE_CHECKING:
    from odradek.broker.cluster.quorum.voters import VoterHistory

VOTE, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, DESCRIBE_QUORUM = 52, 53, 54, 55


class Peers:
    def __init__(
        self,
        node_id: int,
        history: VoterHistory,
        listener: str,
        bootstrap_servers: Sequence[tuple[str, int]],
        request_timeout_s: float,
    ) -> None:
        self.node_id = node_id
        self.history = history
        self.listener = listener  # the voters' endpoint to reach them on
        self._bootstrap_servers = list(bootstrap_servers)
        self._request_timeout_s = request_timeout_s
        self._found: dict[int, tuple[str, int]] = {}  # leaders found through those
        self._clients: dict[int, NodeClient] = {}

    def voters(self) -> dict[int, tuple[str, int]]:
        """The voters in force (the latest set appended) and where to reach them."""
        return {
            node_id: node.address(self.listener)
            for node_id, node in self.history.voters.nodes.items()
        }

    def client(self, node_id: int) -> NodeClient:
        """The connection the quorum's requests to `node_id` take turns on."""
        client = self._clients.get(node_id)
        if client is None:
            timeout = self._request_timeout_s + requests.FETCH_WAIT_MS / 1000
            client = self._clients[node_id] = self.connect(node_id, timeout)
        return client

    def connect(self, node_id: int, timeout_s: float) -> NodeClient:
        """A connection of its own to `node_id`, for a request that must not wait
        behind the quorum's (the caller closes it)."""
        host, port = self.voters().get(node_id) or self._found[node_id]
        return NodeClient(host, port, timeout_s)

    def voters_changed(self) -> None:
        """A new voter set: connections to nodes whose endpoints moved are made again."""
        voters = self.voters()
        for node_id, client in list(self._clients.items()):
            if node_id in voters and (client.host, client.port) != voters[node_id]:
                self._clients.pop(node_id).close()

    async def find_leader(self) -> tuple[int, int] | None:
        """(leader id, epoch) of the quorum, found by asking the bootstrap servers and
        the voters known (DescribeQuorum answers only on the leader)."""
        addresses = dict.fromkeys(self._bootstrap_servers)
        addresses.update(dict.fromkeys(a for n, a in self.voters().items() if n != self.node_id))
        for host, port in addresses:
            client = NodeClient(host, port, self._request_timeout_s)
            try:
                answer = await client.call(DESCRIBE_QUORUM, 2, requests.describe_quorum())
            except NodeUnreachable:
                continue
            finally:
                client.close()
            if not requests.leads(answer):
                continue
            found = answer.topics[0].partitions[0]
            if found.leader_id != self.node_id:
                self._found[found.leader_id] = (host, port)
                stale = self._clients.pop(found.leader_id, None)
                if stale is not None:
                    stale.close()
                return found.leader_id, found.leader_epoch
        return None

    # -- the requests of the quorum's protocol -----------------------------------------

    async def ask_vote(
        self, cluster_id: str, voter: int, epoch: int, mine: LogEnd, pre_vote: bool
    ) -> Any:
        """The voter's answer (its partition's part; None: an error)."""
        request = requests.vote(cluster_id, voter, self.node_id, epoch, mine, pre_vote)
        answer = await self.client(voter).call(VOTE, 2, request)
        if answer.error_code != 0:
            return None
        return answer.topics[0].partitions[0]

    async def begin_epoch(self, cluster_id: str, voter: int, epoch: int) -> Any:
        """Tell `voter` this controller leads `epoch`: its answer (None: none)."""
        request = requests.begin_epoch(cluster_id, voter, self.node_id, epoch)
        try:
            answer = await self.client(voter).call(BEGIN_QUORUM_EPOCH, 1, request)
        except NodeUnreachable:
            return None
        if answer.error_code != 0 or not answer.topics:
            return None
        return answer.topics[0].partitions[0]

    async def end_epoch(self, cluster_id: str, epoch: int, successors: list[int]) -> None:
        """Tell the other voters this controller stops leading `epoch`."""
        request = requests.end_epoch(cluster_id, self.node_id, epoch, successors)

        async def tell(voter: int) -> None:
            with contextlib.suppress(NodeUnreachable):
                await self.client(voter).call(END_QUORUM_EPOCH, 1, request)

        await asyncio.gather(*(tell(v) for v in successors))

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
