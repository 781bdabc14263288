"""The leader election's data, as Confluent's registry puts it on the group protocol.

Members join group `schema-registry` with protocol type `sr` and one protocol `v0` whose
metadata is the member's identity, JSON:
  {"version":1,"host":"h","port":8081,"master_eligibility":true,"scheme":"http"}
The group's leader sends every member the same assignment:
  {"version":1,"error":0,"master":"<member id>","master_identity":{...}}
error 1 (DUPLICATE_URLS) when two members claim one URL: then nobody writes. The chosen
writer stays the writer while it is a member (sticky), else the eligible member with the
smallest URL is chosen. Sans-I/O.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

GROUP = "schema-registry"
PROTOCOL_TYPE = "sr"
PROTOCOL = "v0"
NO_ERROR, DUPLICATE_URLS = 0, 1


@dataclass(frozen=True)
class Identity:
    scheme: str
    host: str
    port: int
    eligible: bool = True

    @classmethod
    def from_url(cls, url: str, eligible: bool = True) -> "Identity":
        parts = urlsplit(url)
        default = 443 if parts.scheme == "https" else 80
        return cls(parts.scheme or "http", parts.hostname or "127.0.0.1",
                   parts.port or default, eligible)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def to_json(self) -> dict:
        return {"version": 1, "host": self.host, "port": self.port,
                "master_eligibility": self.eligible, "scheme": self.scheme}

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, d: dict) -> "Identity":
        return cls(str(d.get("scheme") or "http"), str(d["host"]), int(d["port"]),
                   bool(d.get("master_eligibility", True)))

    @classmethod
    def decode(cls, raw: bytes) -> "Identity":
        return cls.from_json(json.loads(raw))


@dataclass(frozen=True)
class Assignment:
    error: int
    leader_member: str | None
    leader: Identity | None

    def encode(self) -> bytes:
        d = {"version": 1, "error": self.error, "master": self.leader_member,
             "master_identity": self.leader.to_json() if self.leader else None}
        return json.dumps(d, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> "Assignment":
        d = json.loads(raw)
        ident = d.get("master_identity")
        return cls(int(d.get("error", 0)), d.get("master"),
                   Identity.from_json(ident) if ident else None)


def assign(members: dict[str, Identity], previous_leader: str | None) -> Assignment:
    """The assignment every member gets, from {member_id: identity}."""
    urls = [m.url for m in members.values()]
    if len(set(urls)) != len(urls):
        return Assignment(DUPLICATE_URLS, None, None)
    eligible = {mid: ident for mid, ident in members.items() if ident.eligible}
    if not eligible:
        return Assignment(NO_ERROR, None, None)
    if previous_leader is not None:
        for mid, ident in eligible.items():
            if ident.url == previous_leader:
                return Assignment(NO_ERROR, mid, ident)
    mid, ident = min(eligible.items(), key=lambda kv: kv[1].url)
    return Assignment(NO_ERROR, mid, ident)
