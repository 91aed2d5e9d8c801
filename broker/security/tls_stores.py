"""Key and trust stores of a TLS listener, read as Kafka reads them
(DefaultSslEngineFactory): PEM files or inline PEM values, PKCS12 files; the
settings are described in tls.py.

PEM values may be written on one line (a properties file with continued lines
makes them so): blocks are found by their BEGIN and END lines and their base64
read whatever the spacing.
"""

from __future__ import annotations

import base64
import binascii
import re

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from odradek.broker.security.tls import ListenerSettings

DEFAULT_STORE_TYPE = "JKS"  # Kafka's default for both stores
STORE_TYPES = ("PEM", "PKCS12", "JKS")
JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")  # JKS, JCEKS
MAX_STORE_BYTES = 16 * 1024 * 1024

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


def key_and_chain(settings: ListenerSettings) -> bytes:
    """The listener's private key (PKCS#8, not encrypted) and certificate chain, as PEM."""
    key, chain = _key_store(settings)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return key_pem + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)


def trusted_certificates(settings: ListenerSettings) -> str | None:
    """The trust store's certificates as PEM; None when no trust store is configured."""
    certificates = _trust_store(settings)
    if certificates is None:
        return None
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


# -- key store ------------------------------------------------------------------------


def _key_store(settings: ListenerSettings) -> tuple[PrivateKeyTypes, list[x509.Certificate]]:
    kind = _store_type(settings, "ssl.keystore.type")
    location = settings.get("ssl.keystore.location")
    password = settings.get("ssl.keystore.password")
    key_password = settings.get("ssl.key.password")
    inline_key = settings.get("ssl.keystore.key")
    inline_chain = settings.get("ssl.keystore.certificate.chain")
    if inline_key is not None or inline_chain is not None:
        if kind != "PEM":
            raise settings.error("ssl.keystore.type", "must be PEM with ssl.keystore.key")
        if inline_key is None:
            raise settings.error("ssl.keystore.key", "not set, but the certificate chain is")
        if inline_chain is None:
            raise settings.error("ssl.keystore.certificate.chain", "not set, but the key is")
        if location is not None:
            raise settings.error("ssl.keystore.location", "give it or ssl.keystore.key, not both")
        _no_pem_password(settings, "ssl.keystore.password")
        key = _pem_key(settings, "ssl.keystore.key", inline_key, key_password)
        return key, _pem_certificates(settings, "ssl.keystore.certificate.chain", inline_chain)
    if location is None:
        raise settings.error(
            "ssl.keystore.location",
            f"not set: listener {settings.listener.name} uses "
            f"{settings.listener.security_protocol}, which needs a key store "
            "(or ssl.keystore.key and ssl.keystore.certificate.chain)",
        )
    data = _read(settings, "ssl.keystore.location")
    if kind == "PEM":
        _no_pem_password(settings, "ssl.keystore.password")
        text = data.decode("ascii", errors="replace")
        key = _pem_key(settings, "ssl.keystore.location", text, key_password)
        return key, _pem_certificates(settings, "ssl.keystore.location", text)
    _check_binary_store(settings, "ssl.keystore.location", data)
    if password is None:
        raise settings.error("ssl.keystore.password", "needed to open the PKCS12 key store")
    # the key may have a password of its own (ssl.key.password); one of the two opens it
    for candidate in dict.fromkeys([password, key_password or password]):
        try:
            found, certificate, others = pkcs12.load_key_and_certificates(data, candidate.encode())
        except ValueError:
            continue
        if found is None or certificate is None:
            raise settings.error("ssl.keystore.location", "the key store holds no private key")
        return found, [certificate, *others]
    raise settings.error(
        "ssl.keystore.password", "cannot open the PKCS12 key store: wrong password or not PKCS12"
    )


def _pem_key(
    settings: ListenerSettings, name: str, text: str, password: str | None
) -> PrivateKeyTypes:
    blocks = _pem_blocks(settings, name, text)
    keys = [(label, der) for label, der in blocks if label.endswith("PRIVATE KEY")]
    if len(keys) != 1:
        raise settings.error(name, f"expected one PEM private key, found {len(keys)}")
    label, der = keys[0]
    encrypted = label == "ENCRYPTED PRIVATE KEY"
    if encrypted and password is None:
        raise settings.error("ssl.key.password", "not set, and the private key is encrypted")
    try:
        return serialization.load_der_private_key(
            der, password.encode() if encrypted and password is not None else None
        )
    except (ValueError, TypeError, binascii.Error) as exc:
        reason = "wrong ssl.key.password or not PKCS#8" if encrypted else str(exc)
        raise settings.error(name, f"cannot read the private key: {reason}") from None


# -- trust store ----------------------------------------------------------------------


def _trust_store(settings: ListenerSettings) -> list[x509.Certificate] | None:
    kind = _store_type(settings, "ssl.truststore.type")
    location = settings.get("ssl.truststore.location")
    password = settings.get("ssl.truststore.password")
    inline = settings.get("ssl.truststore.certificates")
    if inline is not None:
        if kind != "PEM":
            raise settings.error(
                "ssl.truststore.type", "must be PEM with ssl.truststore.certificates"
            )
        if location is not None:
            raise settings.error(
                "ssl.truststore.location", "give it or ssl.truststore.certificates, not both"
            )
        _no_pem_password(settings, "ssl.truststore.password")
        return _pem_certificates(settings, "ssl.truststore.certificates", inline)
    if location is None:
        if password is not None:
            raise settings.error("ssl.truststore.password", "set, but no trust store is")
        return None
    data = _read(settings, "ssl.truststore.location")
    if kind == "PEM":
        _no_pem_password(settings, "ssl.truststore.password")
        text = data.decode("ascii", errors="replace")
        return _pem_certificates(settings, "ssl.truststore.location", text)
    _check_binary_store(settings, "ssl.truststore.location", data)
    try:
        # without a password Java reads the certificates unchecked; here too when they
        # are not encrypted
        store = pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError:
        raise settings.error(
            "ssl.truststore.password",
            "cannot open the PKCS12 trust store: wrong password or not PKCS12",
        ) from None
    certificates = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certificates.insert(0, store.cert.certificate)
    if not certificates:
        raise settings.error("ssl.truststore.location", "the trust store holds no certificate")
    return certificates


# -- both -----------------------------------------------------------------------------


def _store_type(settings: ListenerSettings, name: str) -> str:
    kind = (settings.get(name) or DEFAULT_STORE_TYPE).strip().upper()
    if kind not in STORE_TYPES:
        raise settings.error(name, f"{kind!r} is not a store type Odradek reads: PKCS12, PEM")
    return kind


def _read(settings: ListenerSettings, name: str) -> bytes:
    path = settings.get(name) or ""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_STORE_BYTES + 1)
    except OSError as exc:
        raise settings.error(name, f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_STORE_BYTES:
        raise settings.error(name, f"{path} is larger than a key store can be")
    return data


def _no_pem_password(settings: ListenerSettings, name: str) -> None:
    if settings.get(name) is not None:
        raise settings.error(
            name, "not used with PEM stores (an encrypted key's password is ssl.key.password)"
        )


def _check_binary_store(settings: ListenerSettings, name: str, data: bytes) -> None:
    """Refuse, with the reason, a JKS store and a PEM file given as PKCS12 or JKS."""
    path = settings.get(name)
    if data[:4] in JKS_MAGIC:
        raise settings.error(
            name,
            f"{path} is a JKS store, which Odradek does not read: use PKCS12 "
            "or PEM (keytool -importkeystore -deststoretype PKCS12 converts it)",
        )
    if b"-----BEGIN " in data[:4096]:
        type_name = name.replace(".location", ".type")
        raise settings.error(name, f"{path} is PEM: set {type_name}=PEM")


def _pem_blocks(settings: ListenerSettings, name: str, text: str) -> list[tuple[str, bytes]]:
    """(label, DER) of each PEM block."""
    blocks: list[tuple[str, bytes]] = []
    for label, body in _PEM_BLOCK.findall(text):
        try:
            blocks.append((label, base64.b64decode("".join(body.split()), validate=True)))
        except binascii.Error:
            raise settings.error(name, f"its {label} block is not base64") from None
    return blocks


def _pem_certificates(settings: ListenerSettings, name: str, text: str) -> list[x509.Certificate]:
    certificates: list[x509.Certificate] = []
    for label, der in _pem_blocks(settings, name, text):
        if label != "CERTIFICATE":
            continue
        try:
            certificates.append(x509.load_der_x509_certificate(der))
        except ValueError as exc:
            raise settings.error(name, f"a certificate that does not parse: {exc}") from None
    if not certificates:
        raise settings.error(name, "holds no PEM certificate")
    return certificates
