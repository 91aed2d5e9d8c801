"""TLS for SSL and SASL_SSL listeners, configured with Kafka's ssl.* settings; each
may be given for one listener as `listener.name.<listener>.ssl.…`.

- Key store: `ssl.keystore.type` PEM (`ssl.keystore.location`, a file holding the
  private key and the certificate chain, or the inline `ssl.keystore.key` and
  `ssl.keystore.certificate.chain`; `ssl.key.password` for an encrypted PKCS#8
  key) or PKCS12 (`ssl.keystore.location`, `ssl.keystore.password`, and
  `ssl.key.password` when the key has a password of its own). Kafka's default type
  JKS is read as Java 17 reads it: a PKCS12 file is accepted, a real JKS one is
  refused with the advice to convert it (tls_stores.py).
- Trust store, for client certificates: `ssl.truststore.type` PEM
  (`ssl.truststore.location` or inline `ssl.truststore.certificates`) or PKCS12
  (`ssl.truststore.location`, `ssl.truststore.password`); without one the
  system's CAs.
- `ssl.client.auth` none / requested / required (on SASL_SSL listeners only in its
  listener-prefixed form, as on Kafka), `ssl.enabled.protocols` (TLSv1.2,
  TLSv1.3; the older ones are ignored, as Java 17 disables them),
  `ssl.cipher.suites` for TLS 1.2 (IANA or OpenSSL names; the TLS 1.3 suites
  cannot be narrowed here and are always on with TLSv1.3) and
  `ssl.principal.mapping.rules` (ssl_principal.py).

A setting that cannot be used is a TlsConfigError naming it; the broker does not
start. The server's private key reaches OpenSSL through an in-memory file.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from odradek.broker.security.session import ANONYMOUS
from odradek.broker.security.ssl_principal import (
    MalformedName,
    MappingRuleError,
    NoMatchingRule,
    certificate_subject,
    parse_rules,
    rfc2253_name,
)
from odradek.broker.settings.config import BrokerConfig, ConfigError
from odradek.broker.settings.listeners import Listener

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
DEFAULT_PROTOCOLS = "TLSv1.2,TLSv1.3"
CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
DISABLED_VERSIONS = frozenset({"SSLv2Hello", "SSLv3", "TLSv1", "TLSv1.1"})
TLS13_SUITES = frozenset(
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
)


class TlsConfigError(ConfigError):
    """An ssl.* setting that cannot be used; the message names it."""


class PrincipalError(ValueError):
    """A client certificate that gives no principal (no mapping rule applies)."""


@dataclass(frozen=True)
class ListenerSettings:
    """The ssl.* settings as one listener sees them."""

    config: BrokerConfig
    listener: Listener

    def own_name(self, name: str) -> str:
        return f"listener.name.{self.listener.name.lower()}.{name}"

    def get(self, name: str) -> str | None:
        return self.config.listener_setting(self.listener.name, name)

    def own(self, name: str) -> str | None:
        """The setting only in its listener-prefixed form."""
        return self.config.raw.get(self.own_name(name))

    def error(self, name: str, reason: str) -> TlsConfigError:
        given = self.own_name(name) if self.own(name) is not None else name
        return TlsConfigError(f"{given}: {reason} (listener {self.listener.name})")


def server_context(config: BrokerConfig, listener: Listener) -> ssl.SSLContext | None:
    """The TLS context of an SSL or SASL_SSL listener; None for the others."""
    if listener.security_protocol not in TLS_PROTOCOLS:
        return None
    from odradek.broker.security import tls_stores  # cryptography: only for TLS listeners

    settings = ListenerSettings(config, listener)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _set_versions(context, settings)
    _set_cipher_suites(context, settings)
    with _private_file(tls_stores.key_and_chain(settings)) as path:
        try:
            context.load_cert_chain(path)
        except ssl.SSLError as exc:
            raise settings.error(
                "ssl.keystore.location"
                if settings.get("ssl.keystore.location")
                else "ssl.keystore.key",
                f"the private key and the certificate do not go together ({exc.reason})",
            ) from None
    context.verify_mode = _client_auth(settings)
    trusted = tls_stores.trusted_certificates(settings)
    if trusted:
        context.load_verify_locations(cadata=trusted)
    elif context.verify_mode != ssl.CERT_NONE:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    try:
        parse_rules(settings.get("ssl.principal.mapping.rules"))
    except MappingRuleError as exc:
        raise settings.error("ssl.principal.mapping.rules", str(exc)) from None
    return context


def ssl_principal(ssl_object: ssl.SSLObject | None, mapping_rules: str | None) -> str:
    """The principal of an SSL connection: "User:" and the client certificate's subject
    as the mapping rules write it; User:ANONYMOUS without a certificate."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    try:
        name = rfc2253_name(certificate_subject(der))
        return "User:" + parse_rules(mapping_rules).name(name)
    except (NoMatchingRule, MalformedName) as exc:
        raise PrincipalError(str(exc)) from None


def _set_versions(context: ssl.SSLContext, settings: ListenerSettings) -> None:
    names = _list(settings.get("ssl.enabled.protocols") or DEFAULT_PROTOCOLS)
    unknown = [n for n in names if n not in VERSIONS and n not in DISABLED_VERSIONS]
    if unknown:
        raise settings.error(
            "ssl.enabled.protocols", f"{', '.join(unknown)}: not a TLS version (TLSv1.2, TLSv1.3)"
        )
    versions = [VERSIONS[n] for n in names if n in VERSIONS]
    if not versions:
        raise settings.error("ssl.enabled.protocols", "enables neither TLSv1.2 nor TLSv1.3")
    context.minimum_version, context.maximum_version = min(versions), max(versions)


def _set_cipher_suites(context: ssl.SSLContext, settings: ListenerSettings) -> None:
    names = _list(settings.get("ssl.cipher.suites") or "")
    if not names:
        return  # the TLS library's defaults
    tls12: list[str] = []
    for name in names:
        if name in TLS13_SUITES:
            continue
        openssl_name = openssl_cipher_name(name)
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(openssl_name)
        except ssl.SSLError:
            raise settings.error(
                "ssl.cipher.suites", f"{name}: not a cipher suite this broker's TLS library has"
            ) from None
        tls12.append(openssl_name)
    if tls12:
        context.set_ciphers(":".join(tls12))
    elif context.maximum_version == ssl.TLSVersion.TLSv1_3:
        context.minimum_version = ssl.TLSVersion.TLSv1_3  # no TLS 1.2 suite is allowed
    else:
        raise settings.error(
            "ssl.cipher.suites", "names only TLS 1.3 suites, and TLSv1.3 is not enabled"
        )


def openssl_cipher_name(name: str) -> str:
    """OpenSSL's name of a TLS 1.2 suite given by its IANA (Java) name:
    TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 -> ECDHE-RSA-AES256-GCM-SHA384. Other names
    are taken to be OpenSSL's already."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    exchange, cipher = name[len("TLS_") :].split("_WITH_", 1)
    cipher = cipher.replace("AES_128", "AES128").replace("AES_256", "AES256")
    cipher = cipher.replace("_CBC", "").replace("CHACHA20_POLY1305_SHA256", "CHACHA20_POLY1305")
    parts = [] if exchange == "RSA" else exchange.split("_")
    return "-".join(parts + cipher.split("_"))


def _client_auth(settings: ListenerSettings) -> ssl.VerifyMode:
    name = "ssl.client.auth"
    # On SASL_SSL listeners Kafka reads it only in its listener-prefixed form.
    if settings.listener.security_protocol == "SASL_SSL":
        value = settings.own(name)
    else:
        value = settings.get(name)
    mode = CLIENT_AUTH.get((value or "none").strip().lower())
    if mode is None:
        raise settings.error(name, f"{value!r} is not one of {', '.join(CLIENT_AUTH)}")
    return mode


def _list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A path OpenSSL can read ``data`` from, gone afterwards: an in-memory file where
    the system has them, else a temporary file only its owner can read."""
    if hasattr(os, "memfd_create"):
        descriptor = os.memfd_create("odradek-tls", os.MFD_CLOEXEC)
        try:
            with open(descriptor, "wb", closefd=False) as file:
                file.write(data)
            yield f"/proc/self/fd/{descriptor}"
        finally:
            os.close(descriptor)
        return
    with tempfile.NamedTemporaryFile() as file:
        file.write(data)
        file.flush()
        yield file.name
