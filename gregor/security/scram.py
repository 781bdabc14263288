"""SCRAM-SHA-256 / SCRAM-SHA-512 as Kafka speaks them (RFC 5802, RFC 7677): key derivation,
credentials, and the four messages, parsed and formatted. Sans-I/O; used by the broker's SCRAM
server, gregor's SCRAM client and `gregor users` (which salts passwords before sending them).

Written by hand because no library fits a Kafka broker: Kafka applies no SASLprep (names and
passwords are plain UTF-8), only accepts ASCII sasl names (=2C / =3D escaped), and computes the
AuthMessage from the exact bytes the client sent (librdkafka before 2.6.1 repeats its nonce in
client-final, which only works with the bytes as sent and an `endswith` nonce check).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

# Kafka's ScramMechanism: wire type codes (KIP-554 messages), hash, iteration bounds.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True)
class ScramMechanism:
    name: str            # "SCRAM-SHA-256"
    hash_name: str       # hashlib name
    type_code: int       # 1 = SHA-256, 2 = SHA-512 in Describe/AlterUserScramCredentials

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str | bytes, salt: bytes, iterations: int) -> bytes:
        """Hi(password, salt, i): PBKDF2 with this HMAC, one block (RFC 5802 2.2)."""
        pw = password.encode("utf-8") if isinstance(password, str) else bytes(password)
        return hashlib.pbkdf2_hmac(self.hash_name, pw, salt, iterations)

    def client_key(self, salted: bytes) -> bytes:
        return self.hmac(salted, b"Client Key")

    def server_key(self, salted: bytes) -> bytes:
        return self.hmac(salted, b"Server Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_TYPE = {m.type_code: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


class ScramError(ValueError):
    """A SCRAM message that does not follow the grammar, or a failed verification."""


@dataclass(frozen=True)
class ScramCredential:
    """What the broker stores per (user, mechanism): never the password (RFC 5802 3)."""
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:            # keys stay out of logs and tracebacks
        return f"ScramCredential(iterations={self.iterations})"

    def to_text(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString (the /config/users znode value)."""
        b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},"
                f"server_key={b64(self.server_key)},iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> "ScramCredential":
        fields = {}
        for part in str(text).split(","):
            key, sep, value = part.partition("=")
            if not sep:
                raise ScramError("a SCRAM credential must look like "
                                 "salt=..,stored_key=..,server_key=..,iterations=N")
            fields[key.strip()] = value.strip()
        try:
            return cls(base64.b64decode(fields["salt"], validate=True),
                       base64.b64decode(fields["stored_key"], validate=True),
                       base64.b64decode(fields["server_key"], validate=True),
                       int(fields["iterations"]))
        except (KeyError, ValueError, binascii.Error) as e:
            raise ScramError(f"malformed SCRAM credential ({type(e).__name__}: {e})") from None


def credential_from_salted(mech: ScramMechanism, salt: bytes, salted: bytes,
                           iterations: int) -> ScramCredential:
    """What AlterUserScramCredentials gives the broker (salt + SaltedPassword) -> a credential
    (Kafka's ScramFormatter.generateCredential)."""
    return ScramCredential(bytes(salt), mech.stored_key(mech.client_key(salted)),
                           mech.server_key(salted), iterations)


def credential_from_password(mech: ScramMechanism, password: str, iterations: int = MIN_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = random_salt() if salt is None else salt
    return credential_from_salted(mech, salt, mech.salted_password(password, salt, iterations),
                                  iterations)


def random_nonce() -> str:
    """Kafka's server nonce: 130 random bits in base 36 (printable, no comma)."""
    n = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(digits[r])
    return "".join(reversed(out)) or "0"


def random_salt() -> bytes:
    """Kafka's salts are the UTF-8 bytes of a random base-36 string; any bytes would do."""
    return random_nonce().encode("ascii")


def escape_name(username: str) -> str:
    """user name -> saslname (RFC 5802 5.1): ',' -> '=2C', '=' -> '=3D'."""
    return username.replace("=", "=3D").replace(",", "=2C")


def unescape_name(saslname: str) -> str:
    """saslname -> user name; any '=' not starting =2C or =3D is invalid (ScramFormatter)."""
    name = saslname.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise ScramError("invalid SCRAM user name: '=' must be escaped as =3D")
    return name.replace("=3D", "=")


# Kafka's ScramMessages grammar (ASCII only: Java's [\x01-\x7F&&[^=,]] classes).
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_B64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))")
_SERVER_FIRST = re.compile(
    rf"(?:m={_VALUE},)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_B64}),i=(?P<iterations>[0-9]+)"
    rf"{_EXTENSIONS}")
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
    rf"p=(?P<proof>{_B64})")
_SERVER_FINAL = re.compile(
    rf"(?:e=(?P<error>[\x01-\x2B\x2D-\x3C\x3E-\x7F]+)|v=(?P<signature>{_B64})){_EXTENSIONS}")


def _text(message: bytes | str, what: str) -> str:
    if isinstance(message, str):
        return message
    try:
        return bytes(message).decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"invalid SCRAM {what} message: not UTF-8") from None


@dataclass(frozen=True)
class ClientFirst:
    authzid: str
    saslname: str
    nonce: str
    bare: str                 # client-first-message-bare exactly as sent
    extensions: dict

    @property
    def username(self) -> str:
        return unescape_name(self.saslname)

    @classmethod
    def parse(cls, message: bytes | str) -> "ClientFirst":
        text = _text(message, "client first")
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            # The message is the client's own bytes; the user name in it is not a secret,
            # but the broker logs only the grammar problem.
            raise ScramError("invalid SCRAM client first message format")
        exts = dict(kv.split("=", 1) for kv in m.group("extensions").split(",")[1:])
        return cls(m.group("authzid") or "", m.group("saslname"), m.group("nonce"),
                   m.group("bare"), exts)

    @staticmethod
    def build(username: str, nonce: str, extensions: dict | None = None) -> str:
        ext = "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        return f"n,,n={escape_name(username)},r={nonce}{ext}"


@dataclass(frozen=True)
class ServerFirst:
    nonce: str
    salt: bytes
    iterations: int
    text: str

    @classmethod
    def parse(cls, message: bytes | str) -> "ServerFirst":
        text = _text(message, "server first")
        m = _SERVER_FIRST.fullmatch(text)
        if m is None:
            raise ScramError("invalid SCRAM server first message format")
        iterations = int(m.group("iterations"))
        if iterations <= 0:
            raise ScramError("invalid SCRAM server first message: iterations must be positive")
        return cls(m.group("nonce"), base64.b64decode(m.group("salt")), iterations, text)

    @staticmethod
    def build(nonce: str, salt: bytes, iterations: int) -> str:
        return f"r={nonce},s={base64.b64encode(salt).decode('ascii')},i={iterations}"


@dataclass(frozen=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str        # client-final-message-without-proof exactly as sent

    @classmethod
    def parse(cls, message: bytes | str) -> "ClientFinal":
        text = _text(message, "client final")
        m = _CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise ScramError("invalid SCRAM client final message format")
        return cls(base64.b64decode(m.group("channel")), m.group("nonce"),
                   base64.b64decode(m.group("proof")), m.group("without_proof"))


@dataclass(frozen=True)
class ServerFinal:
    error: str | None
    signature: bytes | None

    @classmethod
    def parse(cls, message: bytes | str) -> "ServerFinal":
        text = _text(message, "server final")
        m = _SERVER_FINAL.fullmatch(text)
        if m is None:
            raise ScramError("invalid SCRAM server final message format")
        if m.group("error") is not None:
            return cls(m.group("error"), None)
        return cls(None, base64.b64decode(m.group("signature")))

    @staticmethod
    def build(signature: bytes) -> str:
        return f"v={base64.b64encode(signature).decode('ascii')}"


def auth_message(client_first_bare: str, server_first: str, client_final_without_proof: str) -> bytes:
    return f"{client_first_bare},{server_first},{client_final_without_proof}".encode("utf-8")


def xor(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise ScramError("SCRAM proof has the wrong length")
    return bytes(x ^ y for x, y in zip(a, b))


class ScramClient:
    """The client half: first() -> str, final(server_first) -> str, verify(server_final).

    The password is kept only until the salted password is derived."""

    def __init__(self, mech: ScramMechanism, username: str, password: str,
                 nonce: str | None = None, extensions: dict | None = None,
                 max_iterations: int = 1_000_000):
        self.mech = mech
        self._password = password
        self.nonce = nonce or secrets.token_urlsafe(24).replace(",", "_")
        self._first = ClientFirst.build(username, self.nonce, extensions)
        self._max_iterations = max_iterations     # librdkafka's bound on what a server asks
        self._server_signature: bytes | None = None

    def __repr__(self) -> str:
        return f"ScramClient({self.mech.name})"

    def first(self) -> str:
        return self._first

    def final(self, server_first: bytes | str) -> str:
        sf = ServerFirst.parse(server_first)
        if not sf.nonce.startswith(self.nonce) or len(sf.nonce) == len(self.nonce):
            raise ScramError("the server's SCRAM nonce does not extend ours")
        if not MIN_ITERATIONS <= sf.iterations <= self._max_iterations:
            raise ScramError(f"the server asks for {sf.iterations} SCRAM iterations, outside "
                             f"{MIN_ITERATIONS}..{self._max_iterations}")
        salted = self.mech.salted_password(self._password, sf.salt, sf.iterations)
        self._password = None
        without_proof = f"c=biws,r={sf.nonce}"
        msg = auth_message(self._first[3:], sf.text, without_proof)
        client_key = self.mech.client_key(salted)
        signature = self.mech.hmac(self.mech.stored_key(client_key), msg)
        self._server_signature = self.mech.hmac(self.mech.server_key(salted), msg)
        proof = base64.b64encode(xor(client_key, signature)).decode("ascii")
        return f"{without_proof},p={proof}"

    def verify(self, server_final: bytes | str) -> None:
        sf = ServerFinal.parse(server_final)
        if sf.error is not None:
            raise ScramError(f"the server refused the SCRAM proof: {sf.error}")
        if self._server_signature is None or \
                not hmac.compare_digest(sf.signature, self._server_signature):
            raise ScramError("the server's SCRAM signature is wrong (not the server that "
                             "holds our credential?)")
