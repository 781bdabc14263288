"""A secured cluster's broker certificate, issued again by the cluster's own CA with the
brokers' namespace addresses among its names, so clients that check the broker's name
against the address they dialled (librdkafka, kafka-python) accept it."""
from __future__ import annotations

import datetime
import ipaddress

from ..cli.cluster_security import CERT_DAYS, _write_private


def reissue_broker_certificate(files, addresses: list[str]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key = serialization.load_pem_private_key(files.ca_key.read_bytes(), None)
    ca = x509.load_pem_x509_certificate(files.ca_pem.read_bytes())
    key = serialization.load_pem_private_key(files.broker_pem.read_bytes(), None)
    now = datetime.datetime.now(datetime.timezone.utc)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gregor"),
                                     x509.NameAttribute(NameOID.COMMON_NAME, "gregor broker")]))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    _write_private(files.broker_pem,
                   key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())
                   + cert.public_bytes(pem) + ca.public_bytes(pem))
