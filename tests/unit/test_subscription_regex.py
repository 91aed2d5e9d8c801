"""KIP-848 subscription patterns refused as Kafka's RE2/J refuses them, in its words."""

from __future__ import annotations

import pytest

from odradek.coordinator.group.regex import invalid_regex_message


@pytest.mark.parametrize(
    ("pattern", "description"),
    [
        ("[unclosed", "missing closing ]"),
        ("(open", "missing closing )"),
        ("close)", "unexpected )"),
        ("*start", "missing argument to repetition operator"),
        ("a**", "invalid nested repetition operator"),
        ("trailing\\", "trailing backslash at end of expression"),
        ("(?=ahead)x", "invalid or unsupported Perl syntax"),
        ("(a)\\1", "invalid escape sequence"),
    ],
)
def test_refused_patterns_quote_re2j(pattern: str, description: str) -> None:
    assert invalid_regex_message(pattern) == (
        f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {description}."
    )


@pytest.mark.parametrize("pattern", ["orders-.*", "a|b", "[a-z]+\\d*", "\\\\1", ""])
def test_patterns_re2_accepts(pattern: str) -> None:
    assert invalid_regex_message(pattern) is None
