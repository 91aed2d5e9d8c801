"""Regular expressions of KIP-848 subscriptions, checked as Kafka checks them.

Kafka compiles a member's `subscribed_topic_regex` with RE2/J: what it refuses
answers INVALID_REGULAR_EXPRESSION, quoting RE2/J's description of the error. Python's
`re` finds the same mistakes in other words (translated here), and accepts what
RE2 leaves out (lookaround, backreferences), which is refused here too.
"""

from __future__ import annotations

import re

# Python's message (its start) -> RE2/J's description
_DESCRIPTIONS = (
    ("unterminated character set", "missing closing ]"),
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("bad escape (end of pattern)", "trailing backslash at end of expression"),
    ("bad escape", "invalid escape sequence"),
    ("bad character range", "invalid character class range"),
    ("unknown extension", "invalid or unsupported Perl syntax"),
)
_PERL_ONLY = re.compile(r"\(\?(?:[=!]|<[=!])")  # lookahead and lookbehind
_BACKREFERENCE = re.compile(r"(?<!\\)(?:\\\\)*\\[1-9]")


def description(error: re.error) -> str:
    for python, re2 in _DESCRIPTIONS:
        if error.msg.startswith(python):
            return re2
    return error.msg


def invalid_regex_message(pattern: str) -> str | None:
    """Kafka's message for a subscription pattern RE2/J refuses, or None if it is fine."""
    try:
        re.compile(pattern)
        problem = None
    except re.error as error:
        problem = description(error)
    if problem is None and _PERL_ONLY.search(pattern):
        problem = "invalid or unsupported Perl syntax"
    if problem is None and _BACKREFERENCE.search(pattern):
        problem = "invalid escape sequence"
    if problem is None:
        return None
    return f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {problem}."
