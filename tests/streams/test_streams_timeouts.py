"""A streams group member fenced by the coordinator's timers: one that does not revoke
its tasks within its rebalance timeout (on Odradek and Apache Kafka 4.4 alike), and one
whose session runs out, as the group's `streams.session.timeout.ms` says (Odradek,
whose lower bound for it can be set low for the test)."""

from __future__ import annotations

import time

import pytest
from helpers.broker import BrokerFactory
from helpers.names import unique_name
from helpers.wire import WireClient

from streams.test_streams_bad_input import (
    HEARTBEAT,
    INCREMENTAL_ALTER_CONFIGS,
    UNKNOWN_MEMBER_ID,
    body,
    described,
    joining,
    owning,
    prepared,
    topology,
)

pytestmark = pytest.mark.timeout(120)


def test_a_member_that_does_not_revoke_in_time_is_fenced(either_broker: str) -> None:
    with WireClient(either_broker) as client:
        group, source, first, epoch = prepared(client)
        # the first member says it may take 2 s to revoke
        rejoined = client.call(
            HEARTBEAT, 0, body(group, first, epoch, rebalance_timeout=2000, **owning(0, 1))
        )
        assert rejoined.error_code == 0, rejoined
        epoch = int(rejoined.member_epoch)  # a new setting: a new group epoch
        second = unique_name("second")
        joined = client.call(HEARTBEAT, 0, body(group, second, 0, **joining(topology(source))))
        assert (joined.error_code, joined.active_tasks) == (0, ()), joined
        quick = {"rebalance_timeout": 2000, **owning(0, 1)}
        revoking = client.call(HEARTBEAT, 0, body(group, first, epoch, **quick))
        assert revoking.member_epoch == epoch and len(revoking.active_tasks[0].partitions) == 1
        deadline = time.monotonic() + 10
        while True:  # it keeps its session alive but never lets the task go
            held = client.call(HEARTBEAT, 0, body(group, first, epoch, **quick))
            if held.error_code:
                break
            assert time.monotonic() < deadline, "never fenced"
            time.sleep(0.5)
        assert (held.error_code, held.error_message) == (
            UNKNOWN_MEMBER_ID,
            f"Member {first} is not a member of group {group}.",
        )
        taking = client.call(
            HEARTBEAT, 0, body(group, second, int(joined.member_epoch), **owning())
        )
        assert taking.error_code == 0
        assert sorted(taking.active_tasks[0].partitions) == [0, 1]
        group_now = described(client, group)
        assert [m.member_id for m in group_now.members] == [second]


def test_a_silent_member_is_fenced_when_its_session_runs_out(
    broker_factory: BrokerFactory,
) -> None:
    # a session must be longer than the heartbeat interval: both set short
    broker = broker_factory(
        {
            "group.streams.min.session.timeout.ms": "1000",
            "group.streams.min.heartbeat.interval.ms": "500",
        }
    )
    with WireClient(broker.bootstrap) as client:
        group, _source, member, epoch = prepared(client)
        setting = [
            {"name": "streams.heartbeat.interval.ms", "config_operation": 0, "value": "500"},
            {"name": "streams.session.timeout.ms", "config_operation": 0, "value": "1500"},
        ]
        altered = client.call(
            INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [{"resource_type": 32, "resource_name": group, "configs": setting}],
                "validate_only": False,
            },
        )
        assert altered.responses[0].error_code == 0, altered
        beat = client.call(HEARTBEAT, 0, body(group, member, epoch, **owning(0, 1)))
        assert beat.error_code == 0
        deadline = time.monotonic() + 15
        while (gone := described(client, group)).members and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (gone.group_state, list(gone.members)) == ("Empty", [])
        assert gone.group_epoch == epoch + 1  # the fence moved the group on
        late = client.call(HEARTBEAT, 0, body(group, member, epoch, **owning(0, 1)))
        assert late.error_code == UNKNOWN_MEMBER_ID
