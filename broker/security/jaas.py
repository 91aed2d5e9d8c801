"""`sasl.jaas.config` values, written as Kafka writes them:

    <LoginModule class> <flag> key="value" key2=value2 ...;

with one or more such entries, `//` and `/* */` comments, double-quoted values
(backslash escapes) or bare words. A PlainLoginModule entry names the users
a PLAIN listener accepts with options `user_<name>="<password>"`.

For a listener and mechanism, the first setting given of
`listener.name.<listener>.<mechanism>.sasl.jaas.config`,
`<mechanism>.sasl.jaas.config`, `listener.name.<listener>.sasl.jaas.config`
and `sasl.jaas.config` is used (mechanism in lower case: `scram-sha-256`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_SYMBOLS = "=;"


class JaasError(ValueError):
    """A JAAS configuration that does not parse; the message says where."""


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str  # required, requisite, sufficient or optional
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, value) pairs: kind "word", "quoted" or the symbol itself."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JaasError("unterminated /* comment in JAAS config")
            i = end + 2
        elif char in _SYMBOLS:
            out.append((char, char))
            i += 1
        elif char == '"':
            value, i = _quoted(text, i + 1)
            out.append(("quoted", value))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in _SYMBOLS + '"':
                if text.startswith(("//", "/*"), i):
                    break
                i += 1
            out.append(("word", text[start:i]))
    return out


def _quoted(text: str, i: int) -> tuple[str, int]:
    """The value of a quoted string whose opening quote is just before ``i``."""
    chars: list[str] = []
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(chars), i + 1
        if char == "\\" and i + 1 < len(text):
            following = text[i + 1]
            chars.append(_ESCAPES.get(following, following))
            i += 2
            continue
        chars.append(char)
        i += 1
    raise JaasError("unterminated quoted value in JAAS config")


def parse_jaas_config(text: str) -> list[LoginModule]:
    tokens = _tokens(text)
    modules: list[LoginModule] = []
    position = 0

    def take() -> tuple[str, str] | None:
        nonlocal position
        if position >= len(tokens):
            return None
        position += 1
        return tokens[position - 1]

    while position < len(tokens):
        module = take()
        if module is None or module[0] != "word":
            raise JaasError("login module class expected in JAAS config")
        flag = take()
        if flag is None or flag[0] != "word":
            raise JaasError("Login module control flag not specified in JAAS config")
        if flag[1].lower() not in CONTROL_FLAGS:
            raise JaasError(f"Invalid login module control flag '{flag[1]}' in JAAS config")
        options: dict[str, str] = {}
        while True:
            token = take()
            if token is None:
                raise JaasError("JAAS config entry not terminated by semi-colon")
            if token[0] == ";":
                break
            if token[0] not in ("word", "quoted"):
                raise JaasError(f"option name expected in JAAS config, found '{token[1]}'")
            equals, value = take(), take()
            if (
                equals is None
                or equals[0] != "="
                or value is None
                or value[0] not in ("word", "quoted")
            ):
                raise JaasError(f"Value not specified for key '{token[1]}' in JAAS config")
            options[token[1]] = value[1]
        modules.append(LoginModule(module[1], flag[1].lower(), options))
    if not modules:
        raise JaasError("Login module not specified in JAAS config")
    return modules


def jaas_setting_names(listener: str, mechanism: str) -> list[str]:
    """The settings that may hold a listener's JAAS config for a mechanism, first wins."""
    prefix, lower = f"listener.name.{listener.lower()}.", mechanism.lower()
    return [
        f"{prefix}{lower}.sasl.jaas.config",
        f"{lower}.sasl.jaas.config",
        f"{prefix}sasl.jaas.config",
        "sasl.jaas.config",
    ]


def jaas_config_for(
    settings: Mapping[str, str], listener: str, mechanism: str
) -> tuple[str, str] | None:
    """(setting name, value) of the JAAS config that applies, or None."""
    for name in jaas_setting_names(listener, mechanism):
        value = settings.get(name)
        if value is not None and value.strip():
            return name, value
    return None


def plain_users(modules: list[LoginModule]) -> dict[str, str]:
    """user -> password from the `user_<name>` options of PlainLoginModule entries."""
    users: dict[str, str] = {}
    for module in modules:
        if module.class_name != PLAIN_LOGIN_MODULE:
            continue
        for key, value in module.options.items():
            if key.startswith("user_") and len(key) > len("user_"):
                users[key[len("user_") :]] = value
    return users
