"""The Spark connector's pure parts: option parsing and offset-range planning."""

from __future__ import annotations

import pytest
from helpers.env import require_module

require_module("pyspark")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from odradek.spark.options import OptionError, parse_sink_options, parse_source_options  # noqa: E402
from odradek.spark.ranges import (  # noqa: E402
    OffsetRange,
    from_checkpoint,
    limit_offsets,
    split_ranges,
    to_checkpoint,
)

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def source(streaming: bool = False, **options: str) -> object:
    return parse_source_options({**BOOT, **options}, streaming=streaming)


def test_defaults_follow_spark_kafka_source() -> None:
    batch = parse_source_options({**BOOT, "subscribe": "a, b"}, streaming=False)
    assert batch.subscription.topics == ("a", "b")
    assert batch.starting.kind == "earliest" and batch.ending.kind == "latest"
    assert not batch.read_committed and batch.fail_on_data_loss and not batch.include_headers
    assert batch.client_config["isolation.level"] == "read_uncommitted"
    stream = parse_source_options({**BOOT, "subscribe": "a"}, streaming=True)
    assert stream.starting.kind == "latest"


def test_option_names_are_case_insensitive_and_kafka_settings_pass_through() -> None:
    opts = parse_source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "Assign": '{"t": [0, 2]}',
            "kafka.isolation.level": "read_committed",
            "kafka.fetch.max.bytes": "1000",
            "includeHeaders": "TRUE",
            "minPartitions": "4",
        },
        streaming=False,
    )
    assert opts.subscription.partitions == (("t", 0), ("t", 2))
    assert opts.read_committed and opts.include_headers and opts.min_partitions == 4
    assert opts.client_config["fetch.max.bytes"] == "1000"
    assert opts.bootstrap_servers == "h:1"


def test_per_partition_offsets_and_timestamps() -> None:
    opts = parse_source_options(
        {
            **BOOT,
            "subscribe": "t",
            "startingOffsets": '{"t": {"0": 5, "1": -2}}',
            "endingOffsetsByTimestamp": '{"t": {"0": 1700000000000}}',
        },
        streaming=False,
    )
    assert opts.starting.kind == "offsets"
    assert dict(opts.starting.per_partition) == {("t", 0): 5, ("t", 1): -2}
    assert opts.ending.kind == "timestamps"
    assert dict(opts.ending.per_partition) == {("t", 0): 1700000000000}
    # startingTimestamp wins over the other starting options, as in Spark
    both = parse_source_options(
        {**BOOT, "subscribe": "t", "startingTimestamp": "42", "startingOffsets": "earliest"},
        streaming=True,
    )
    assert both.starting.kind == "timestamp" and both.starting.timestamp == 42


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "t"}, False, "kafka.bootstrap.servers"),
        ({**BOOT}, False, "Exactly one of"),
        ({**BOOT, "subscribe": "t", "assign": '{"t":[0]}'}, False, "Exactly one of"),
        ({**BOOT, "subscribe": " , "}, False, "No topics"),
        ({**BOOT, "subscribePattern": "("}, False, "not a valid pattern"),
        ({**BOOT, "assign": '{"t": "0"}'}, False, "assign"),
        ({**BOOT, "assign": "[1]"}, False, "JSON object"),
        ({**BOOT, "subscribe": "t", "startingOffsets": "{oops"}, False, "not valid JSON"),
        ({**BOOT, "subscribe": "t", "startingOffsets": '{"t": {"x": 1}}'}, False, "partition"),
        ({**BOOT, "subscribe": "t", "startingOffsets": "latest"}, False, "'latest' is not valid"),
        ({**BOOT, "subscribe": "t", "endingOffsets": "earliest"}, False, "'earliest' is not"),
        ({**BOOT, "subscribe": "t", "endingOffsets": "latest"}, True, "not valid in streaming"),
        ({**BOOT, "subscribe": "t", "maxOffsetsPerTrigger": "5"}, False, "only valid in stream"),
        ({**BOOT, "subscribe": "t", "maxOffsetsPerTrigger": "0"}, True, "positive integer"),
        ({**BOOT, "subscribe": "t", "minPartitions": "x"}, False, "positive integer"),
        ({**BOOT, "subscribe": "t", "failOnDataLoss": "maybe"}, False, "'true' or 'false'"),
        ({**BOOT, "subscribe": "t", "kafka.auto.offset.reset": "earliest"}, False, "startingOff"),
        ({**BOOT, "subscribe": "t", "kafka.isolation.level": "serial"}, False, "isolation"),
        ({**BOOT, "subscribe": "t", "startingTimestamp": "yesterday"}, False, "milliseconds"),
    ],
)
def test_bad_source_options_are_clear_errors(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        parse_source_options(options, streaming=streaming)


def test_sink_options() -> None:
    opts = parse_sink_options({**BOOT, "topic": " out ", "transactionalIdPrefix": "job7"})
    assert opts.topic == "out" and opts.transactional_id_prefix == "job7"
    assert parse_sink_options(BOOT).topic is None
    with pytest.raises(OptionError, match="transactional.id"):
        parse_sink_options({**BOOT, "kafka.transactional.id": "x"})
    with pytest.raises(OptionError, match="'topic' is empty"):
        parse_sink_options({**BOOT, "topic": " "})


def test_checkpoint_form_is_spark_kafka_json() -> None:
    offsets = {("b", 1): 7, ("a", 0): 3, ("b", 0): 0}
    assert to_checkpoint(offsets) == {"a": {"0": 3}, "b": {"0": 0, "1": 7}}
    assert from_checkpoint(to_checkpoint(offsets)) == offsets


def test_split_ranges_drops_empty_and_splits_in_proportion() -> None:
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 0, 300)]
    assert split_ranges(ranges, None) == [ranges[0], ranges[2]]
    pieces = split_ranges(ranges, 8)
    assert [(p.partition, p.start, p.end) for p in pieces] == [
        (0, 0, 50),
        (0, 50, 100),
        (2, 0, 50),
        (2, 50, 100),
        (2, 100, 150),
        (2, 150, 200),
        (2, 200, 250),
        (2, 250, 300),
    ]


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=6),
    st.integers(1, 40),
)
def test_split_ranges_covers_every_offset_once(bounds: list[tuple[int, int]], parts: int) -> None:
    ranges = [OffsetRange("t", i, min(a, b), max(a, b)) for i, (a, b) in enumerate(bounds)]
    pieces = split_ranges(ranges, parts)
    for r in ranges:
        mine = sorted((p.start, p.end) for p in pieces if p.partition == r.partition)
        covered = [o for start, end in mine for o in range(start, end)]
        assert covered == list(range(r.start, r.end))
        assert all(end > start for start, end in mine)
    non_empty = [r for r in ranges if r.size > 0]
    if len(non_empty) >= parts:
        assert pieces == non_empty  # enough tasks already: nothing is split


def test_limit_offsets_shares_by_lag_and_never_starves() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 10}
    latest = {("t", 0): 1000, ("t", 1): 1, ("t", 2): 10}
    limited = limit_offsets(start, latest, 100)
    assert limited[("t", 1)] == 1  # a tiny share rounds up to one record
    assert limited[("t", 2)] == 10  # nothing to read
    assert limited[("t", 0)] == 99
    assert limit_offsets(start, latest, 5000) == latest


@given(
    st.dictionaries(
        st.integers(0, 5), st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1
    ),
    st.integers(1, 5000),
)
def test_limit_offsets_stays_within_bounds(
    lags: dict[int, tuple[int, int]], max_records: int
) -> None:
    start = {("t", p): min(a, b) for p, (a, b) in lags.items()}
    latest = {("t", p): max(a, b) for p, (a, b) in lags.items()}
    limited = limit_offsets(start, latest, max_records)
    for tp in latest:
        assert start[tp] <= limited[tp] <= latest[tp]
    read = sum(limited[tp] - start[tp] for tp in latest)
    behind = sum(1 for tp in latest if latest[tp] > start[tp])
    assert read <= max_records + behind  # rounding up gives at most one extra per partition
    assert read > 0 or all(latest[tp] == start[tp] for tp in latest)
