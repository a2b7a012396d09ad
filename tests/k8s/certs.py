"""The TLS material a throwaway control plane needs, made with ``cryptography``: one CA, a
serving certificate for loopback, client certificates for the components, and the
service-account signing key. EC P-256 keys throughout: kube-apiserver accepts them everywhere
and they take milliseconds to make, where RSA takes a noticeable part of a test run."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Client identities: file stem → (common name, organisation). system:masters is the
#: bootstrap superuser group; the components' names are the ones RBAC's bootstrap roles bind.
CLIENTS = {
    "admin": ("admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", ""),
    "scheduler": ("system:kube-scheduler", ""),
}
SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
SERVING_IPS = ("127.0.0.1", "10.0.0.1")


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(common: str, organisation: str = "") -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organisation:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    return x509.Name(parts)


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey):
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
    )


def make_certificates(folder: Path) -> None:
    """Write ca.crt, serving.{crt,key}, <client>.{crt,key} for each of CLIENTS, and
    sa.{key,pub} into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("berth-test-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    def issue(stem: str, subject: x509.Name, usage, names=None) -> None:
        key = _key()
        builder = _builder(subject, ca_name, key).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if names is not None:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        (folder / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, folder / f"{stem}.key")

    san = [x509.DNSName(n) for n in SERVING_NAMES]
    san += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
    issue("serving", _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, san)
    for stem, (common, organisation) in CLIENTS.items():
        issue(stem, _name(common, organisation), ExtendedKeyUsageOID.CLIENT_AUTH)

    signing = _key()
    _write_key(signing, folder / "sa.key")
    (folder / "sa.pub").write_bytes(
        signing.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
