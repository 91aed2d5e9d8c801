"""Certificates for TLS tests: a CA, a server certificate for localhost / 127.0.0.1
and client certificates, written into a directory as PEM and PKCS12 files.

    certs = make_certs(tmp_path)
    certs.server.pem            # private key + certificate chain, for ssl.keystore.type=PEM
    certs.server.p12            # the same as PKCS12, password certs.password
    certs.ca_pem                # what clients trust
    certs.client("alice")       # a client certificate signed by the same CA
"""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from helpers.env import require_executable

PASSWORD = "test-secret"
_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Identity:
    """A certificate with its key, in the forms a key store takes."""

    name: str
    key_pem: Path  # PKCS#8, not encrypted
    cert_pem: Path  # the certificate, then the CA's
    pem: Path  # key and chain in one file
    p12: Path  # key and chain, PKCS12 protected by PASSWORD

    def key_text(self) -> str:
        return self.key_pem.read_text()

    def chain_text(self) -> str:
        return self.cert_pem.read_text()


@dataclass(frozen=True)
class Authority:
    directory: Path
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


@dataclass(frozen=True)
class Certs:
    authority: Authority
    ca_pem: Path
    server: Identity
    password: str = PASSWORD

    @property
    def directory(self) -> Path:
        return self.authority.directory

    def client(self, common_name: str = "client", organizational_unit: str = "test") -> Identity:
        """A client certificate with subject CN=<common_name>,OU=<unit>,O=odradek."""
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "odradek"),
                x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, organizational_unit),
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            ]
        )
        return _issue(self.authority, f"client-{common_name}", subject, server=False)

    def truststore_p12(self) -> Path:
        """The CA in a PKCS12 trust store made by keytool (as Java users make them)."""
        path = self.directory / "truststore.p12"
        if not path.exists():
            keytool = require_executable("keytool", "install a JDK 17")
            subprocess.run(
                [keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", str(self.ca_pem)]
                + ["-keystore", str(path), "-storetype", "PKCS12", "-storepass", self.password],
                check=True,
                capture_output=True,
            )
        return path

    def jks_keystore(self) -> Path:
        """A JKS key store made by keytool, which the broker refuses."""
        path = self.directory / "server.jks"
        if not path.exists():
            keytool = require_executable("keytool", "install a JDK 17")
            subprocess.run(
                [keytool, "-genkeypair", "-alias", "server", "-keyalg", "EC", "-dname"]
                + ["CN=localhost", "-keystore", str(path), "-storetype", "JKS"]
                + ["-storepass", self.password, "-keypass", self.password],
                check=True,
                capture_output=True,
            )
        return path


def make_certs(directory: Path, ca_name: str = "odradek test CA") -> Certs:
    """A new CA and a server certificate for localhost and 127.0.0.1 under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
    now = datetime.datetime.now(datetime.UTC)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_subject)
        .issuer_name(ca_subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = directory / "ca.pem"
    ca_pem.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    authority = Authority(directory, ca_key, ca_cert)
    server_subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "odradek"),
            x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
        ]
    )
    return Certs(authority, ca_pem, _issue(authority, "server", server_subject, server=True))


def _issue(authority: Authority, name: str, subject: x509.Name, *, server: bool) -> Identity:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(authority.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()),
            critical=False,
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    cert = builder.sign(authority.key, hashes.SHA256())
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + authority.cert.public_bytes(
        serialization.Encoding.PEM
    )
    identity = Identity(
        name,
        key_pem=authority.directory / f"{name}.key.pem",
        cert_pem=authority.directory / f"{name}.cert.pem",
        pem=authority.directory / f"{name}.pem",
        p12=authority.directory / f"{name}.p12",
    )
    identity.key_pem.write_bytes(key_bytes)
    identity.cert_pem.write_bytes(chain)
    identity.pem.write_bytes(key_bytes + chain)
    identity.p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            name.encode(),
            key,
            cert,
            [authority.cert],
            serialization.BestAvailableEncryption(PASSWORD.encode()),
        )
    )
    return identity
