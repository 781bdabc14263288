"""The AdminClient's SCRAM user calls (mixed into AdminClient), KIP-554:

    admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "alice-secret", iterations=8192),
        UserScramCredentialDeletion("bob", "SCRAM-SHA-512")])          # {user: None}
    admin.describe_user_scram_credentials()       # {user: [ScramCredentialInfo]}

The password never leaves this process: the client salts it (a random salt, or the one given)
and sends only the salted password, from which the broker derives what it stores.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..protocol.errors import ErrorCode, error_for_code
from ..security.scram import BY_TYPE, MECHANISMS, MIN_ITERATIONS, random_salt


def _mechanism(value):
    if isinstance(value, int):
        if value not in BY_TYPE:
            raise ValueError(f"unknown SCRAM mechanism type {value}; use SCRAM-SHA-256 or "
                             "SCRAM-SHA-512")
        return BY_TYPE[value]
    name = str(getattr(value, "name", value)).upper().replace("_", "-")
    if name not in MECHANISMS:
        raise ValueError(f"unknown SCRAM mechanism {value!r}; use SCRAM-SHA-256 or "
                         "SCRAM-SHA-512")
    return MECHANISMS[name]


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: str           # "SCRAM-SHA-256"
    iterations: int


@dataclass(frozen=True)
class UserScramCredentialUpsertion:
    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = MIN_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class UserScramCredentialDeletion:
    user: str
    mechanism: str


class UserScramAdminMethods:
    def describe_user_scram_credentials(self, users=None, timeout: float | None = None
                                        ) -> dict[str, list[ScramCredentialInfo]]:
        """{user: [ScramCredentialInfo]} of the given users (all users with a credential
        when None); raises for a user that has none (RESOURCE_NOT_FOUND)."""
        timeout = self._timeout(timeout)
        names = None if users is None else ([users] if isinstance(users, str) else list(users))
        body = {"users": None if names is None else [{"name": u} for u in names]}
        resp = self._scram_request("DescribeUserScramCredentials", body, timeout)
        if resp["error_code"]:
            raise error_for_code(resp["error_code"], "cannot describe SCRAM credentials: "
                                 f"{resp.get('error_message') or ''}".rstrip(": "))
        out, first = {}, None
        for r in resp["results"]:
            if r["error_code"]:
                first = first or error_for_code(
                    r["error_code"], f"cannot describe the SCRAM credentials of user "
                    f"{r['user']!r}: {r.get('error_message') or ''}".rstrip(": "))
                continue
            out[r["user"]] = [ScramCredentialInfo(BY_TYPE[c["mechanism"]].name
                                                  if c["mechanism"] in BY_TYPE
                                                  else str(c["mechanism"]), c["iterations"])
                              for c in r["credential_infos"]]
        if first is not None:
            raise first
        return out

    def alter_user_scram_credentials(self, alterations, timeout: float | None = None
                                     ) -> dict[str, None]:
        """Apply upsertions and deletions; {user: None}, or the first failure raised (after
        the broker applied every user's alterations that were valid)."""
        timeout = self._timeout(timeout)
        deletions, upsertions = [], []
        for a in alterations:
            mech = _mechanism(a.mechanism)
            if isinstance(a, UserScramCredentialDeletion):
                deletions.append({"name": a.user, "mechanism": mech.type_code})
                continue
            salt = a.salt if a.salt is not None else random_salt()
            upsertions.append({
                "name": a.user, "mechanism": mech.type_code, "iterations": int(a.iterations),
                "salt": salt,
                "salted_password": mech.salted_password(a.password, salt, int(a.iterations))})
        resp = self._scram_request("AlterUserScramCredentials",
                                   {"deletions": deletions, "upsertions": upsertions}, timeout)
        out, first = {}, None
        for r in resp["results"]:
            if r["error_code"]:
                first = first or error_for_code(
                    r["error_code"], f"cannot change the SCRAM credentials of user "
                    f"{r['user']!r}: {r.get('error_message') or ''}".rstrip(": "))
            out[r["user"]] = None
        if first is not None:
            raise first
        return out

    def _scram_request(self, api: str, body: dict, timeout: float) -> dict:
        version = self._net.api_version(None, api, timeout=timeout)
        if version is None:
            raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                 f"the broker does not support {api} (Kafka 2.7+ and gregor "
                                 "do)")
        return self._net.request(None, api, body, version, timeout)
