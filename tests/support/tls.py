"""Test certificates (trustme): a CA, a `localhost` server certificate, client certificates,
written as PEM and PKCS12 files the way operators hand them to Kafka.

    pki = Pki(tmp_path)
    pki.ca_pem, pki.server_pem (key + chain), pki.client("alice") -> (cert_pem, key_pem)
"""
from __future__ import annotations

from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

STORE_PASSWORD = "store-secret-7"


class Pki:
    def __init__(self, directory: Path, ca: trustme.CA | None = None):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca = ca or trustme.CA()
        self.ca_pem = self.dir / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_pem))
        # only the name: clients that connect to 127.0.0.1 fail host name verification
        self.server = self.ca.issue_cert("localhost")
        self.server_pem = self.dir / "server.pem"            # key + chain, ssl.keystore.type=PEM
        self.server.private_key_and_cert_chain_pem.write_to_path(str(self.server_pem))

    def server_key_text(self) -> str:
        return self.server.private_key_pem.bytes().decode()

    def server_chain_text(self) -> str:
        return "".join(b.bytes().decode() for b in self.server.cert_chain_pems)

    def client(self, name: str, **subject) -> tuple[Path, Path]:
        """(certificate PEM, key PEM) of a client whose subject CN is name (plus the given
        O, OU attributes)."""
        cert = self.ca.issue_cert(f"{name}.clients.test", common_name=name,
                                  organization_name=subject.get("O"),
                                  organization_unit_name=subject.get("OU"))
        cert_path, key_path = self.dir / f"{name}.pem", self.dir / f"{name}.key"
        cert.cert_chain_pems[0].write_to_path(str(cert_path))
        cert.private_key_pem.write_to_path(str(key_path))
        return cert_path, key_path

    def pkcs12_keystore(self, name: str = "server.p12") -> Path:
        key = serialization.load_pem_private_key(self.server.private_key_pem.bytes(), None)
        chain = [x509.load_pem_x509_certificate(b.bytes()) for b in self.server.cert_chain_pems]
        data = pkcs12.serialize_key_and_certificates(
            b"server", key, chain[0], chain[1:] or None,
            serialization.BestAvailableEncryption(STORE_PASSWORD.encode()))
        path = self.dir / name
        path.write_bytes(data)
        return path

    def pkcs12_truststore(self, name: str = "trust.p12") -> Path:
        ca = x509.load_pem_x509_certificate(self.ca.cert_pem.bytes())
        data = pkcs12.serialize_key_and_certificates(
            None, None, None, [ca], serialization.BestAvailableEncryption(STORE_PASSWORD.encode()))
        path = self.dir / name
        path.write_bytes(data)
        return path
