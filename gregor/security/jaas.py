"""Java's `sasl.jaas.config` strings, the one-line JAAS form Kafka uses for SASL credentials:

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Parsed the way Java's JaasConfig tokenizer reads it: a login module class, a control flag,
`name=value` options (values quoted with "..." and backslash escapes, or bare words), `;` at the
end of each module; /* */ and // comments are skipped. The options hold secrets, so the parsed
entry never shows them in its repr.
"""
from __future__ import annotations

from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class JaasError(ValueError):
    """A sasl.jaas.config value that does not parse (the message never quotes option values)."""


@dataclass(frozen=True)
class JaasEntry:
    module: str
    flag: str
    options: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"JaasEntry({self.module} {self.flag}, options={sorted(self.options)})"


def _tokens(text: str):
    """Yield (kind, value): kind is 'word', 'quoted' or one of '=', ';', '{', '}'."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JaasError("sasl.jaas.config has an unclosed /* comment")
            i = end + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif c in "=;{}":
            yield c, c
            i += 1
        elif c == '"':
            out, i = [], i + 1
            while True:
                if i >= n:
                    raise JaasError("sasl.jaas.config has an unclosed quoted value")
                c = text[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n:
                    nxt = text[i + 1]
                    out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
                    i += 2
                    continue
                out.append(c)
                i += 1
            yield "quoted", "".join(out)
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in '=;"{}':
                i += 1
            yield "word", text[start:i]


def _entries(toks: list, i: int, closing: str | None) -> tuple[list[JaasEntry], int]:
    """Login module entries from toks[i:] up to the end (closing None) or a closing '}'."""
    entries: list[JaasEntry] = []
    while i < len(toks) and toks[i][0] != closing:
        kind, module = toks[i]
        if kind != "word":
            raise JaasError("sasl.jaas.config must start with a login module class name, "
                            "e.g. org.apache.kafka.common.security.scram.ScramLoginModule")
        if i + 1 >= len(toks) or toks[i + 1][0] != "word" or toks[i + 1][1].lower() not in FLAGS:
            raise JaasError(f"sasl.jaas.config: login module {module} must be followed by a "
                            f"control flag ({', '.join(FLAGS)})")
        flag = toks[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(toks):
                raise JaasError(f"sasl.jaas.config: the entry of {module} must end with ';'")
            kind, value = toks[i]
            if kind == ";":
                i += 1
                break
            if kind != "word" or i + 2 >= len(toks) or toks[i + 1][0] != "=" or \
                    toks[i + 2][0] not in ("word", "quoted"):
                raise JaasError(f"sasl.jaas.config: options of {module} must look like "
                                'name="value"')
            options[value] = toks[i + 2][1]
            i += 3
        entries.append(JaasEntry(module, flag, options))
    return entries, i


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """Every login module entry of a sasl.jaas.config value (usually exactly one)."""
    entries, _ = _entries(list(_tokens(str(text or ""))), 0, None)
    if not entries:
        raise JaasError("sasl.jaas.config is empty")
    return entries


def parse_jaas_file(text: str) -> dict[str, list[JaasEntry]]:
    """The sections of a JAAS login configuration file (Java's
    -Djava.security.auth.login.config), e.g. ZooKeeper's client login:

        Client {
            org.apache.zookeeper.server.auth.DigestLoginModule required
            username="gregor" password="...";
        };
    """
    toks = list(_tokens(str(text or "")))
    sections: dict[str, list[JaasEntry]] = {}
    i = 0
    while i < len(toks):
        kind, name = toks[i]
        if kind != "word" or i + 1 >= len(toks) or toks[i + 1][0] != "{":
            raise JaasError("a JAAS file is made of sections: Name { <login module> "
                            "required key=\"value\" ...; };")
        entries, i = _entries(toks, i + 2, "}")
        if i >= len(toks):
            raise JaasError(f"JAAS section {name} is not closed with '}};'")
        i += 1
        if i < len(toks) and toks[i][0] == ";":
            i += 1
        sections[name] = entries
    return sections


def single_entry(text: str) -> JaasEntry:
    entries = parse_jaas_config(text)
    if len(entries) != 1:
        raise JaasError(f"sasl.jaas.config must contain one login module, found {len(entries)}")
    return entries[0]


def client_credentials(text: str) -> tuple[str | None, str | None]:
    """(username, password) of a client's sasl.jaas.config (PLAIN or SCRAM login module)."""
    entry = single_entry(text)
    return entry.options.get("username"), entry.options.get("password")


def plain_users(text: str) -> dict[str, str]:
    """The broker's PLAIN user table: the user_<name>="<password>" options."""
    entry = single_entry(text)
    return {k[len("user_"):]: v for k, v in entry.options.items() if k.startswith("user_")}
