"""The principal of an SSL connection: subjects written as Java's X500Principal.getName()
writes them (the expected strings were checked against Java 17), Kafka's
ssl.principal.mapping.rules (cases from Kafka's SslPrincipalMapperTest), cipher suite
names."""

from __future__ import annotations

import contextlib
import datetime
import os

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from odradek.broker.security.ssl_principal import (
    MalformedName,
    MappingRuleError,
    NoMatchingRule,
    Rule,
    certificate_subject,
    parse_rules,
    rfc2253_name,
)
from odradek.broker.security.tls import openssl_cipher_name

# DER of a subject Name -> what X500Principal.getName() gives for it
JAVA_NAMES = [
    (
        "30323110300e060355040a0c076f64726164656b310d300b060355040b0c0474657374310f300d06035504"
        "030c06636c69656e74",
        "CN=client,OU=test,O=odradek",
    ),
    (
        "3040310b3009060355040613025553310b300906035504080c024d44310f300d06035504070c0646756c74"
        "6f6e3113301106035504030c0a546b61632c204164616d",
        "CN=Tkac\\, Adam,L=Fulton,ST=MD,C=US",
    ),
    (  # every character Java escapes, spaces at both ends, an e-mail address as an OID
        "3035311d301b06035504030c1420236c6561643d2b3c3e3b225c20747261696c203114301206092a864886"
        "f70d01090116056140622e63",
        '1.2.840.113549.1.9.1=#16056140622e63,CN=\\ \\#lead\\=\\+\\<\\>\\;\\"\\\\ trail\\ ',
    ),
    (  # DC and UID by name; serialNumber and title as OIDs
        "306031133011060a0992268993f22c6401191603636f6d31173015060a0992268993f22c64011916076578"
        "616d706c6531143012060a0992268993f22c6401010c046a646f65310b3009060355040513023432310d30"
        "0b060355040c0c04626f7373",
        "2.5.4.12=#0c04626f7373,2.5.4.5=#13023432,UID=jdoe,DC=example,DC=com",
    ),
    (  # a multi-valued RDN
        "3033311d300c06035504030c056d756c7469300d060355040b0c0676616c7565643112301006035504090c"
        "0931204d61696e205374",
        "STREET=1 Main St,CN=multi+OU=valued",
    ),
    (  # UTF-8, a BMPString (read as UTF-8 by Java: NULs written \00), an IA5String
        "3040311b301906035504030c125a6fc3ab20c3bc6ec3af636f646520e29c9331133011060355040a1e0a00"
        "62006d0070002000e9310c300a060355040b1603696135",
        "OU=ia5,O=\\00b\\00m\\00p\\00 \\00\ufffd,CN=Zoë ünïcode ✓",
    ),
    (
        "30233115301306092b06010401868d1f010c06637573746f6d310a300806035504030c0178",
        "CN=x,1.3.6.1.4.1.99999.1=#0c06637573746f6d",
    ),
    (  # a UniversalString is written in hex
        "301f311d301b06035504031c14000000750000006e0000006900000020000000e9",
        "CN=#1c14000000750000006e0000006900000020000000e9",
    ),
    ("30143112301006035504030c0963746c011f7f656e64", "CN=ctl\x01\x1f\x7fend"),
    ("3011310f300d0603550403140674363120c3a9", "CN=t61 é"),
    ("3000", ""),
    ("300e310c300a06035504030c03202020", "CN=\\ \\ \\ "),
    ("300e310c300a060355040a0c03610062", "O=a\\00b"),
    ("300e310c300a06035504030c03ff6162", "CN=\ufffdab"),
]


@pytest.mark.parametrize(("der", "java"), JAVA_NAMES)
def test_names_as_java_writes_them(der: str, java: str) -> None:
    assert rfc2253_name(bytes.fromhex(der)) == java


def test_the_subject_of_a_certificate() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "odradek"),
            x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
        ]
    )
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "some CA")])
    now = datetime.datetime.now(datetime.UTC)
    for serial in (1, 2**150):  # a one-byte and a 20-byte serial number
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256())
        )
        der = cert.public_bytes(serialization.Encoding.DER)
        assert certificate_subject(der) == subject.public_bytes()
        assert rfc2253_name(certificate_subject(der)) == "CN=alice,O=odradek"


def test_malformed_names_raise_one_error() -> None:
    """Truncated and random bytes: a name or MalformedName, never another exception."""
    valid = bytes.fromhex(JAVA_NAMES[3][0])
    samples = [valid[:cut] for cut in range(len(valid))]
    samples += [bytes([0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]), bytes([0x30, 0x80]), b"\x1f\x01"]
    samples += [os.urandom(n) for n in range(1, 60) for _ in range(20)]
    for sample in samples:
        with contextlib.suppress(MalformedName):
            rfc2253_name(sample)
        with contextlib.suppress(MalformedName):
            certificate_subject(sample)


# -- mapping rules (Kafka's SslPrincipalMapperTest) -------------------------------------


def describe(rule: Rule) -> str:
    """A rule as Kafka's SslPrincipalMapper.Rule.toString() writes it."""
    if rule.pattern is None:
        return "DEFAULT"
    case = {"L": "/L", "U": "/U"}.get(rule.case, "")
    return f"RULE:{rule.pattern.pattern}/{rule.replacement}{case}"


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules: str) -> None:
    assert parse_rules(rules).rules


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        "RULE:^CN=(unclosed/$1/",
        "RULE:^CN=(.*)$/$x/",
    ],
)
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(MappingRuleError):
        parse_rules(rules)


def test_mapping() -> None:
    mapper = parse_rules(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert (
        mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    )


def test_mapping_without_a_default_and_replacement_edge_cases() -> None:
    with pytest.raises(NoMatchingRule):
        parse_rules("RULE:^CN=(.*),OU=a$/$1/").name("CN=x,OU=b")
    assert parse_rules(None).name("CN=x,OU=b") == "CN=x,OU=b"
    assert parse_rules("").rules == ()
    # $2 names no group: kept as written; \$ is a literal dollar; $12 with one group is $1, 2
    assert parse_rules("RULE:^CN=([a-z]+)$/$1-$2/").name("CN=ab") == "ab-$2"
    assert parse_rules("RULE:^CN=([a-z]+)$/\\$1=$1/").name("CN=ab") == "$1=ab"
    assert parse_rules("RULE:^CN=([a-z]+)$/$12/").name("CN=ab") == "ab2"


def test_comma_with_whitespace() -> None:
    mapper = parse_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


@pytest.mark.parametrize(
    ("expected", "rules"),
    [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
        ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
        (
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
        ),
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
        ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
        ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
        (
            "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, "
            "/DEFAULT, DEFAULT]",
            "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, "
            "/DEFAULT/,DEFAULT",
        ),
    ],
)
def test_rules_splitting(expected: str, rules: str) -> None:
    assert "[" + ", ".join(describe(r) for r in parse_rules(rules).rules) + "]" == expected


@pytest.mark.parametrize(
    ("iana", "openssl"),
    [
        ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"),
        ("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"),
        ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"),
        ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"),
        ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"),
        ("TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "DHE-RSA-AES256-GCM-SHA384"),
        ("TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"),
        ("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"),
    ],
)
def test_cipher_suite_names(iana: str, openssl: str) -> None:
    assert openssl_cipher_name(iana) == openssl
