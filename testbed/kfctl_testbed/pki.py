"""X.509 helpers for kfctl's e2e harness: the cluster's CA and certificates, the stand-in's certificates
and the CAs that webhook tests make. Test code only; kfctl never imports it.

Built on `cryptography`, so no openssl binary is needed.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

# Backdated so that a clock a little behind on another process never sees "not yet valid".
_BACKDATE = dt.timedelta(hours=1)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its key, PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @property
    def key(self) -> PrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
            raise TypeError(f"unsupported key type {type(key).__name__}")
        return key


def new_key(algorithm: str = "ECDSA", size: int | None = None) -> PrivateKey:
    """A private key as cert-manager's spec.privateKey would ask for it (RSA or ECDSA)."""
    if algorithm.upper() == "RSA":
        return rsa.generate_private_key(public_exponent=65537, key_size=size or 2048)
    curves: dict[int, ec.EllipticCurve] = {256: ec.SECP256R1(), 384: ec.SECP384R1(), 521: ec.SECP521R1()}
    return ec.generate_private_key(curves.get(size or 256, ec.SECP256R1()))


def key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    if common_name:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _san(dns_names: Iterable[str], ip_addresses: Iterable[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    return x509.SubjectAlternativeName(names)


def make_ca(common_name: str, *, days: int = 3650, key: PrivateKey | None = None) -> KeyPair:
    """A self-signed CA certificate."""
    key = key or new_key()
    now = dt.datetime.now(dt.timezone.utc)
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + dt.timedelta(days=days))
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert_pem(cert), key_pem(key))


def issue(
    *,
    common_name: str = "",
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = (),
    organizations: Sequence[str] = (),
    ca: KeyPair | None = None,
    is_ca: bool = False,
    server: bool = True,
    client: bool = False,
    duration: dt.timedelta = dt.timedelta(days=365),
    key: PrivateKey | None = None,
) -> KeyPair:
    """A certificate signed by `ca`, or self-signed when `ca` is None (cert-manager's SelfSigned issuer)."""
    key = key or new_key()
    now = dt.datetime.now(dt.timezone.utc)
    subject = _name(common_name, organizations)
    issuer_name = ca.cert.subject if ca else subject
    signing_key = ca.key if ca else key
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
        [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    )
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + duration)
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=isinstance(key, rsa.RSAPrivateKey),
                key_cert_sign=is_ca,
                crl_sign=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if dns_names or ip_addresses:
        # SANs are what TLS clients check; a certificate without one is useless for serving.
        builder = builder.add_extension(_san(dns_names, ip_addresses), critical=False)
    if ca:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    return KeyPair(cert_pem(builder.sign(signing_key, hashes.SHA256())), key_pem(key))


def dns_names_of(cert: x509.Certificate) -> list[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return san.get_values_for_type(x509.DNSName)


def first_cert(pem: bytes) -> x509.Certificate | None:
    """The first certificate in a PEM bundle, or None when there is none or it does not parse."""
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError:
        return None
    return certs[0] if certs else None


def service_account_key() -> tuple[bytes, bytes]:
    """(private, public) PEM of an RSA key for signing service-account tokens."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key_pem(key), public
