"""The run's CA, made once per run in mitmproxy's confdir, with an ECDSA P-256 key.

mitmproxy signs every leaf certificate with its CA key and gives the leaf that same key, so
the CA's key type is the key type of every TLS handshake n8n makes with the proxy. n8n opens
a new connection (CONNECT, handshake) for every request, so the handshake is on every
request's path: an ECDSA P-256 signature costs the proxy a small fraction of an RSA-2048 one
(mitmproxy's default), and Node verifies either quickly. Everything else is laid out as
mitmproxy's own ``CertStore.create_store`` does (same names, same extensions), so mitmproxy
loads it as its own; the Windows/Android copies (.p12, .cer) are left out.

Runs in mitmproxy's venv (``cryptography`` is mitmproxy's dependency), imported lazily.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from harness.stack.intercept.config import CA_BASENAME


def write_ca(confdir: Path) -> None:
    """``<basename>-ca.pem`` (key then certificate, 0600), ``-ca-cert.pem`` and the
    ``-dhparam.pem`` mitmproxy expects beside them."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    from mitmproxy.certs import CA_EXPIRY, DEFAULT_DHPARAM

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "n8n-chaos run CA"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "n8n-chaos"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    usage = x509.KeyUsage(
        digital_signature=False,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    cert = (
        x509.CertificateBuilder()
        .serial_number(x509.random_serial_number())
        .subject_name(name)
        .issuer_name(name)
        .not_valid_before(now - datetime.timedelta(days=2))
        .not_valid_after(now + CA_EXPIRY)
        .public_key(key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(private_key=key, algorithm=hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    pem_cert = cert.public_bytes(serialization.Encoding.PEM)
    key_file = confdir / f"{CA_BASENAME}-ca.pem"
    key_file.touch(mode=0o600)
    key_file.write_bytes(pem_key + pem_cert)
    (confdir / f"{CA_BASENAME}-ca-cert.pem").write_bytes(pem_cert)
    (confdir / f"{CA_BASENAME}-dhparam.pem").write_bytes(DEFAULT_DHPARAM)
