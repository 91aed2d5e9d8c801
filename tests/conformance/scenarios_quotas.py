"""Scenarios of client quotas: AlterClientQuotas (49) and DescribeClientQuotas (48).

Quotas are the broker's, shared by every scenario: these name users and client ids of
their own run, set values far above anything a test sends, and remove what they set.
Kafka answers entities and keys in the order of Java hash maps of them; the views
sort them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from helpers.wire import WireClient

from conformance.harness import Run, scenario
from conformance.scenarios_acls import login

DESCRIBE_QUOTAS, ALTER_QUOTAS = 48, 49
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
HUGE = 1e12  # bytes a second: no test comes near

Entity = Sequence[tuple[str, str | None]]


def entry(entity: Entity, **ops: float | None) -> dict[str, Any]:
    """An AlterClientQuotas entry; a None value removes the key."""
    return {
        "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
        "ops": [
            {"key": key, "value": 0.0 if value is None else value, "remove": value is None}
            for key, value in ops.items()
        ],
    }


def raw_entry(entity: Entity, ops: Sequence[tuple[str, float]]) -> dict[str, Any]:
    """An entry as written (a key twice, say)."""
    return {
        "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
        "ops": [{"key": key, "value": value, "remove": False} for key, value in ops],
    }


def _entity_view(entity: Any) -> list[tuple[str, str | None]]:
    return sorted(((e.entity_type, e.entity_name) for e in entity), key=lambda p: p[0])


def sorted_alter(answer: Any) -> list[Any]:
    return sorted(
        (
            {
                "entity": _entity_view(e.entity),
                "error_code": e.error_code,
                "error_message": e.error_message,
            }
            for e in answer.entries
        ),
        key=repr,
    )


def sorted_describe(answer: Any) -> dict[str, Any]:
    entries = None
    if answer.entries is not None:
        entries = sorted(
            (
                {
                    "entity": _entity_view(e.entity),
                    "values": sorted((v.key, v.value) for v in e.values),
                }
                for e in answer.entries
            ),
            key=repr,
        )
    return {
        "error_code": answer.error_code,
        "error_message": answer.error_message,
        "entries": entries,
    }


def alter(
    run: Run,
    *entries: dict[str, Any],
    validate_only: bool = False,
    version: int = 1,
    client: WireClient | None = None,
) -> Any:
    body = {"entries": list(entries), "validate_only": validate_only}
    return run.call(ALTER_QUOTAS, version, body, client, view=sorted_alter)


def component(kind: str, match_type: int, match: str | None = None) -> dict[str, Any]:
    return {"entity_type": kind, "match_type": match_type, "match": match}


def describe_body(components: Sequence[dict[str, Any]], strict: bool) -> dict[str, Any]:
    return {"components": list(components), "strict": strict}


def describe(
    run: Run,
    *components: dict[str, Any],
    strict: bool = False,
    version: int = 1,
    client: WireClient | None = None,
    ours: bool = False,
) -> Any:
    """DescribeClientQuotas; `ours` keeps only entities naming this run (other
    scenarios set quotas too)."""

    def view(answer: Any) -> Any:
        seen = sorted_describe(answer)
        if ours and seen["entries"] is not None:
            seen["entries"] = [
                e for e in seen["entries"] if any(run.prefix in (n or "") for _, n in e["entity"])
            ]
        return seen

    body = describe_body(components, strict)
    return run.call(DESCRIBE_QUOTAS, version, body, client, view=view)


def until_values(run: Run, entity: Entity, values: list[tuple[str, float]]) -> None:
    """Wait until the entity has exactly these values (Kafka's brokers learn of a change
    from the controller a moment after it is answered)."""
    components = [
        component(kind, EXACT, name) if name is not None else component(kind, DEFAULT)
        for kind, name in entity
    ]

    def seen(answer: Any) -> list[tuple[str, float]]:
        if not answer.entries:
            return []
        return sorted((v.key, v.value) for v in answer.entries[0].values)

    run.until(
        lambda: run.quiet(DESCRIBE_QUOTAS, 1, describe_body(components, True)),
        lambda answer: seen(answer) == sorted(values),
    )


@scenario("quotas.alter-describe", "client quotas set, described by filters, removed")
def _quotas_valid(run: Run) -> None:
    user, client, other = run.name("user"), run.name("client"), run.name("other")
    both = [("user", user), ("client-id", client)]
    user_default_client = [("user", user), ("client-id", None)]
    alter(
        run,
        entry([("user", user)], producer_byte_rate=HUGE, consumer_byte_rate=2 * HUGE),
        entry([("client-id", client)], request_percentage=250.5),
        entry(both, producer_byte_rate=HUGE, controller_mutation_rate=12.5),
        entry(user_default_client, consumer_byte_rate=HUGE),
    )
    alter(run, entry([("client-id", other)], consumer_byte_rate=HUGE), version=0)
    until_values(run, [("client-id", other)], [("consumer_byte_rate", HUGE)])
    until_values(run, user_default_client, [("consumer_byte_rate", HUGE)])
    describe(run, component("user", EXACT, user), strict=True)
    describe(run, component("user", EXACT, user))
    describe(run, component("user", EXACT, user), component("client-id", DEFAULT))
    describe(run, component("user", EXACT, user), component("client-id", SPECIFIED))
    describe(run, component("client-id", EXACT, client), strict=True, version=0)
    describe(run, component("client-id", SPECIFIED), strict=True, ours=True)
    describe(run, component("client-id", SPECIFIED), ours=True)
    describe(run, ours=True)
    describe(run, component("user", EXACT, run.name("nobody")))
    # validate_only: checked, answered, not changed
    alter(run, entry([("user", user)], producer_byte_rate=5.0), validate_only=True)
    alter(run, entry([("user", None)], producer_byte_rate=5.0), validate_only=True)
    # replaced, partly removed, and removing what is not there
    alter(run, entry([("user", user)], producer_byte_rate=3 * HUGE, consumer_byte_rate=None))
    alter(run, entry([("client-id", other)], request_percentage=None))
    until_values(run, [("user", user)], [("producer_byte_rate", 3 * HUGE)])
    describe(run, component("user", EXACT, user), strict=True)
    alter(
        run,
        entry([("user", user)], producer_byte_rate=None),
        entry([("client-id", client)], request_percentage=None),
        entry(both, producer_byte_rate=None, controller_mutation_rate=None),
        entry(user_default_client, consumer_byte_rate=None),
        entry([("client-id", other)], consumer_byte_rate=None),
    )
    until_values(run, [("client-id", other)], [])
    until_values(run, user_default_client, [])
    describe(run, ours=True)


@scenario("quotas.ip", "a connection creation rate for an ip, described and removed")
def _quotas_ip(run: Run) -> None:
    ip = "10.11.12.13"
    alter(run, entry([("ip", ip)], connection_creation_rate=1000.0))
    until_values(run, [("ip", ip)], [("connection_creation_rate", 1000.0)])
    describe(run, component("ip", EXACT, ip), strict=True)
    alter(run, entry([("ip", ip)], connection_creation_rate=None))
    until_values(run, [("ip", ip)], [])
    describe(run, component("ip", EXACT, ip))


@scenario("quotas.bad-alterations", "quota changes Kafka refuses, beside ones it takes")
def _quotas_invalid(run: Run) -> None:
    user, client = run.name("u"), run.name("c")
    alter(
        run,
        entry([("user", user)], producer_byte_rate=HUGE),
        entry([("client-id", client)], no_such_quota=10.0),
        entry([("user", run.name("zero"))], consumer_byte_rate=0.0),
        entry([("user", run.name("negative"))], request_percentage=-1.0),
        entry([("user", run.name("fraction"))], producer_byte_rate=1.5),
        entry([("user", run.name("large"))], consumer_byte_rate=1e19),
        entry([("user", run.name("conn"))], connection_creation_rate=5.0),
        entry([("ip", "10.0.0.9")], producer_byte_rate=5.0),
        entry([("ip", "10.0.0.10")], connection_creation_rate=2.5),
        entry([("ip", "10.0.0.11")], connection_creation_rate=3e9),
    )
    alter(run, entry([], producer_byte_rate=HUGE))
    alter(run, entry([("group", run.name("g"))], producer_byte_rate=HUGE))
    alter(run, entry([("user", "")], producer_byte_rate=HUGE))
    alter(run, entry([("user", run.name("x")), ("ip", "10.0.0.1")], producer_byte_rate=HUGE))
    alter(
        run,
        raw_entry([("user", run.name("twice"))], [("producer_byte_rate", HUGE)] * 2),
        entry([("client-id", client)], producer_byte_rate=HUGE),
        entry([("client-id", client)], consumer_byte_rate=HUGE),
    )
    alter(run, entry([("user", run.name("gone"))], no_such_quota=None))
    until_values(run, [("user", user)], [("producer_byte_rate", HUGE)])
    until_values(run, [("client-id", client)], [("producer_byte_rate", HUGE)])
    describe(run, ours=True)
    alter(
        run,
        entry([("user", user)], producer_byte_rate=None),
        entry([("client-id", client)], producer_byte_rate=None),
    )
    until_values(run, [("client-id", client)], [])
    describe(run, ours=True)


@scenario("quotas.bad-filters", "describe filters Kafka refuses")
def _quotas_bad_filters(run: Run) -> None:
    name = run.name("u")
    describe(run, component("", EXACT, name))
    describe(run, component("user", EXACT, name), component("user", SPECIFIED))
    describe(run, component("group", EXACT, name))
    describe(run, component("user", EXACT))
    describe(run, component("user", DEFAULT, name))
    describe(run, component("user", SPECIFIED, name))
    describe(run, component("user", 7))
    describe(run, component("ip", SPECIFIED), component("user", EXACT, name))
    describe(run, component("client-id", SPECIFIED), component("ip", DEFAULT), version=0)


@scenario("quotas.refused", "client quotas asked by a principal without ACLs", secure=True)
def _quotas_refused(run: Run) -> None:
    alice = login(run)
    user = run.name("u")
    alter(
        run,
        entry([("user", user)], producer_byte_rate=HUGE),
        entry([("user", user), ("client-id", None)], producer_byte_rate=HUGE),
        client=alice,
    )
    describe(run, component("user", EXACT, user), client=alice)
