"""kfctl_testbed.pki: the certificates the local cluster and the stand-in make verify as TLS clients verify them."""

from __future__ import annotations

import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID
from kfctl_testbed import pki


@pytest.fixture(scope="module")
def ca() -> pki.KeyPair:
    return pki.make_ca("test-ca")


def test_a_ca_is_self_signed_and_may_sign(ca: pki.KeyPair) -> None:
    cert = ca.cert
    assert cert.issuer == cert.subject
    cert.verify_directly_issued_by(cert)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign


def test_a_serving_certificate_chains_to_its_ca(ca: pki.KeyPair) -> None:
    leaf = pki.issue(
        common_name="apiserver", dns_names=["localhost", "kubernetes.default.svc"], ip_addresses=["127.0.0.1"], ca=ca
    )
    cert = leaf.cert
    cert.verify_directly_issued_by(ca.cert)
    assert cert.issuer == ca.cert.subject
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert pki.dns_names_of(cert) == ["localhost", "kubernetes.default.svc"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    # The key is the certificate's.
    assert leaf.key.public_key().public_numbers() == cert.public_key().public_numbers()


def test_another_ca_does_not_verify_it(ca: pki.KeyPair) -> None:
    leaf = pki.issue(common_name="x", dns_names=["x"], ca=ca)
    with pytest.raises(Exception):  # noqa: B017 (cryptography raises InvalidSignature or ValueError)
        leaf.cert.verify_directly_issued_by(pki.make_ca("another").cert)


def test_a_client_certificate_names_its_groups(ca: pki.KeyPair) -> None:
    cert = pki.issue(
        common_name="kubernetes-admin", organizations=["system:masters"], ca=ca, server=False, client=True
    ).cert
    assert cert.subject.rfc4514_string() == "CN=kubernetes-admin,O=system:masters"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    assert pki.dns_names_of(cert) == []


def test_self_signed_without_a_ca() -> None:
    """cert-manager's SelfSigned issuer: issuer and subject are the certificate's own."""
    cert = pki.issue(common_name="webhook", dns_names=["webhook.ns.svc"]).cert
    assert cert.issuer == cert.subject
    cert.verify_directly_issued_by(cert)


@pytest.mark.parametrize(
    ("algorithm", "size", "expected"),
    [
        pytest.param("ECDSA", None, (ec.EllipticCurvePrivateKey, 256), id="ecdsa-default"),
        pytest.param("ecdsa", 384, (ec.EllipticCurvePrivateKey, 384), id="ecdsa-384"),
        pytest.param("ECDSA", 1024, (ec.EllipticCurvePrivateKey, 256), id="ecdsa-unknown-size-is-p256"),
        pytest.param("RSA", 2048, (rsa.RSAPrivateKey, 2048), id="rsa-2048"),
    ],
)
def test_new_key(algorithm: str, size: int | None, expected: tuple[type, int]) -> None:
    key = pki.new_key(algorithm, size)
    assert isinstance(key, expected[0])
    assert key.key_size == expected[1]


def test_first_cert_of_a_bundle(ca: pki.KeyPair) -> None:
    other = pki.make_ca("second")
    assert pki.first_cert(ca.cert_pem + other.cert_pem) == ca.cert
    assert pki.first_cert(b"") is None
    assert pki.first_cert(b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n") is None
