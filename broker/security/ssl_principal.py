"""The principal of an SSL connection, as Kafka's default principal builder makes it.

The client certificate's subject is written as Java's X500Principal.getName()
writes it (RFC 2253: the last RDN first, "CN=client,OU=test,O=odradek"; the
attribute types CN, C, L, ST, O, OU, STREET, DC and UID by name, any other as its
dotted OID with the DER value in hex, "1.2.840.113549.1.9.1=#16..."), then
rewritten by `ssl.principal.mapping.rules`:

    DEFAULT                                the distinguished name as it is
    RULE:pattern/replacement/[L|U]         when the pattern matches the whole name,
                                           the replacement ($1 for a group),
                                           lower- or upper-cased

The first rule that applies gives the name; when none applies the connection is
refused. Patterns are Python regular expressions, which read the usual Java ones
alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

ANONYMOUS_NAME = "ANONYMOUS"

# Attribute types Java writes by name in RFC 2253 form; others are written as OIDs.
_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "STREET",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "0.9.2342.19200300.100.1.1": "UID",
    "0.9.2342.19200300.100.1.25": "DC",
}
# DER string types Java writes as text. It reads each one's bytes as UTF-8 (a
# BMPString among them, which comes out garbled); so does this module.
_STRING_TYPES = frozenset(
    {
        0x0C,  # UTF8String
        0x13,  # PrintableString
        0x14,  # T61String
        0x16,  # IA5String
        0x1B,  # GeneralString
        0x1E,  # BMPString
    }
)
_ESCAPED = set(',=+<>#;"\\')
_SEQUENCE, _SET, _OID, _VERSION = 0x30, 0x31, 0x06, 0xA0
_MAX_NAME_BYTES = 64 * 1024


class MalformedName(ValueError):
    """A subject that is not a well-formed DER Name."""


class MappingRuleError(ValueError):
    """ssl.principal.mapping.rules that do not parse; the message says which rule."""


class NoMatchingRule(LookupError):
    """No mapping rule applies to a distinguished name."""


# -- distinguished names --------------------------------------------------------------


def certificate_subject(certificate_der: bytes) -> bytes:
    """The DER-encoded subject Name of a DER-encoded X.509 certificate."""
    tag, start, end = _read(certificate_der, 0)
    if tag != _SEQUENCE:
        raise MalformedName("a certificate is a SEQUENCE")
    tag, position, end = _read(certificate_der, start)  # tbsCertificate
    if tag != _SEQUENCE:
        raise MalformedName("tbsCertificate is a SEQUENCE")
    if position < end and certificate_der[position] == _VERSION:
        position = _read(certificate_der, position)[2]
    # serialNumber, signature, issuer, validity, then the subject
    for _ in range(4):
        position = _read(certificate_der, position)[2]
    tag, _start, subject_end = _read(certificate_der, position)
    if tag != _SEQUENCE or subject_end > end:
        raise MalformedName("the subject is not a Name")
    return certificate_der[position:subject_end]


def rfc2253_name(name_der: bytes) -> str:
    """A DER-encoded X.500 Name written as Java's X500Principal.getName() writes it."""
    if len(name_der) > _MAX_NAME_BYTES:
        raise MalformedName("name too long")
    tag, start, end = _read(name_der, 0)
    if tag != _SEQUENCE or end != len(name_der):
        raise MalformedName("not a SEQUENCE of RDNs")
    rdns: list[str] = []
    position = start
    while position < end:
        tag, rdn_start, rdn_end = _read(name_der, position)
        if tag != _SET:
            raise MalformedName("an RDN is not a SET")
        rdns.append("+".join(_attributes(name_der, rdn_start, rdn_end)))
        position = rdn_end
    return ",".join(reversed(rdns))


def _attributes(data: bytes, position: int, end: int) -> list[str]:
    written: list[str] = []
    while position < end:
        tag, start, stop = _read(data, position)
        if tag != _SEQUENCE:
            raise MalformedName("an attribute is not a SEQUENCE")
        oid_tag, oid_start, oid_end = _read(data, start)
        if oid_tag != _OID:
            raise MalformedName("an attribute type is not an OID")
        oid = _oid(data[oid_start:oid_end])
        value_tag, value_start, value_end = _read(data, oid_end)
        if value_end != stop:
            raise MalformedName("trailing bytes in an attribute")
        keyword = _KEYWORDS.get(oid)
        if keyword is None or value_tag not in _STRING_TYPES:
            written.append(f"{keyword or oid}=#{data[oid_end:value_end].hex()}")
        else:
            text = data[value_start:value_end].decode("utf-8", errors="replace")
            written.append(f"{keyword}={escape_value(text)}")
        position = stop
    return written


def escape_value(text: str) -> str:
    """An attribute value escaped as Java escapes it: a backslash before , = + < > # ; " \\
    anywhere and before leading and trailing spaces, NUL written \\00."""
    escaped = [f"\\{c}" if c in _ESCAPED else "\\00" if c == "\0" else c for c in text]
    lead = 0
    while lead < len(text) and text[lead] in " \r":
        lead += 1
    trail = len(text)
    while trail > lead and text[trail - 1] in " \r":
        trail -= 1
    for i in (*range(lead), *range(trail, len(text))):
        escaped[i] = "\\" + escaped[i]
    return "".join(escaped)


def _read(data: bytes, position: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the DER element at ``position``."""
    if position + 2 > len(data):
        raise MalformedName("truncated")
    tag, length = data[position], data[position + 1]
    if tag & 0x1F == 0x1F:
        raise MalformedName("multi-byte tags are not used in names")
    start = position + 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or start + count > len(data):
            raise MalformedName("bad length")
        length = int.from_bytes(data[start : start + count], "big")
        start += count
    end = start + length
    if end > len(data):
        raise MalformedName("truncated")
    return tag, start, end


def _oid(body: bytes) -> str:
    if not body or body[-1] & 0x80:
        raise MalformedName("bad OID")
    numbers: list[int] = []
    value = 0
    for byte in body:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            numbers.append(value)
            value = 0
    first = min(numbers[0] // 40, 2)
    return ".".join(str(n) for n in (first, numbers[0] - 40 * first, *numbers[1:]))


# -- mapping rules --------------------------------------------------------------------

# Kafka's grammar for the rules, group for group (SslPrincipalMapper)
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE)

Replacement = Callable[[re.Match[str]], str]


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(_java_replacement(self.replacement, self.pattern.groups), name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


@dataclass(frozen=True)
class PrincipalMapper:
    rules: tuple[Rule, ...]

    def name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(distinguished_name)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"no ssl.principal.mapping.rules apply to {distinguished_name}")


@lru_cache(maxsize=32)
def parse_rules(text: str | None) -> PrincipalMapper:
    """The rules of an ssl.principal.mapping.rules value (None: DEFAULT)."""
    rules: list[Rule] = []
    for match in _RULE_SPLITTER.finditer("DEFAULT" if text is None else text.strip()):
        rule = match.group(1)
        parsed = _RULE_PARSER.match(rule)
        if parsed is None or parsed.end() != len(rule):
            raise MappingRuleError(f"invalid rule {rule!r}")
        if parsed.group(1) is not None:
            rules.append(Rule(None))
        elif parsed.group(2) is not None:
            try:
                pattern = re.compile(parsed.group(2))
            except re.error as exc:
                raise MappingRuleError(f"rule {rule!r}: {exc}") from None
            replacement = parsed.group(4)
            _java_replacement(replacement, pattern.groups)  # fails now, not per connection
            rules.append(Rule(pattern, replacement, parsed.group(6)))
        # an empty rule is ignored
    return PrincipalMapper(tuple(rules))


def _java_replacement(replacement: str, groups: int) -> Replacement:
    """What Java's replaceAll does with ``replacement``: $n is group n (taking as many
    digits as name a group), a backslash quotes the next character. As in Kafka, a $n
    naming a group the pattern does not have is kept as it is."""
    parts: list[str | int] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\":
            if i + 1 == len(replacement):
                raise MappingRuleError(f"replacement {replacement!r} ends with a backslash")
            parts.append(replacement[i + 1])
            i += 2
        elif c == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            number = int(replacement[i + 1])
            if number > groups:
                parts.append("$")
                i += 1
                continue
            i += 2
            while i < len(replacement) and replacement[i].isdigit():
                longer = number * 10 + int(replacement[i])
                if longer > groups:
                    break
                number, i = longer, i + 1
            parts.append(number)
        elif c == "$":
            raise MappingRuleError(f"replacement {replacement!r}: $ must name a group number")
        else:
            parts.append(c)
            i += 1

    def expand(match: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else match.group(p) or "" for p in parts)

    return expand
