"""`ssl.principal.mapping.rules`: a client certificate's distinguished name -> principal name.

Kafka's rules (SslPrincipalMapper): a comma-separated list of `RULE:pattern/replacement/[LU]`
and `DEFAULT`; the first rule whose pattern matches the whole DN gives the name (the
replacement's $1.. refer to the pattern's groups; L / U lower- or upper-case the result);
DEFAULT keeps the DN as it is; when no rule matches, the connection fails authentication.
Patterns are Java regular expressions; the common subset (groups, classes, quantifiers,
anchors) means the same in Python's `re`.
"""
from __future__ import annotations

import re

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(ValueError):
    """No mapping rule applies to a certificate's DN."""


class _Rule:
    __slots__ = ("default", "pattern", "replacement", "lower", "upper")

    def __init__(self, pattern: str | None = None, replacement: str | None = None,
                 lower: bool = False, upper: bool = False):
        self.default = pattern is None
        self.pattern = None if pattern is None else re.compile(pattern)
        self.replacement = replacement
        self.lower = lower
        self.upper = upper

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        out = self.pattern.sub(_python_replacement(self.replacement, self.pattern.groups), dn)
        if self.lower:
            return out.lower()
        if self.upper:
            return out.upper()
        return out

    def __str__(self) -> str:
        if self.default:
            return "DEFAULT"
        text = "RULE:" + self.pattern.pattern
        if self.replacement is not None:
            text += "/" + self.replacement
        if self.lower:
            text += "/L"
        elif self.upper:
            text += "/U"
        return text


def _python_replacement(java: str, groups: int):
    """Java's replacement syntax ($n group references, backslash escapes) as a function for
    re.sub. A $n naming a group the pattern does not have stays literal text (Kafka escapes
    those); $12 with fewer than 12 groups is group 1 followed by "2", as in Java."""
    parts: list = []          # str pieces and int group numbers
    i, n = 0, len(java)
    while i < n:
        c = java[i]
        if c == "\\" and i + 1 < n:
            parts.append(java[i + 1])
            i += 2
        elif c == "$" and i + 1 < n and java[i + 1].isdigit():
            j = i + 1
            while j < n and java[j].isdigit():
                j += 1
            digits = java[i + 1:j]
            if groups == 0 or int(digits[0]) > groups or digits[0] == "0" and len(digits) > 1:
                parts.append(java[i:j])
            else:
                k = 1
                while k < len(digits) and int(digits[:k + 1]) <= groups:
                    k += 1
                parts.append(int(digits[:k]))
                parts.append(digits[k:])
            i = j
        else:
            parts.append(c)
            i += 1

    def replace(m: re.Match) -> str:
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)
    return replace


class SslPrincipalMapper:
    def __init__(self, rules: str | None = "DEFAULT"):
        self.rules = [r for r in (_parse(text) for text in _split(rules)) if r is not None]

    def name(self, dn: str) -> str:
        for rule in self.rules:
            out = rule.apply(dn)
            if out is not None:
                return out
        raise NoMatchingRule(f"no ssl.principal.mapping.rules rule applies to {dn!r}, rules "
                             f"{[str(r) for r in self.rules]}")

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(map(str, self.rules))}])"


def _split(rules: str | None) -> list[str]:
    text = "DEFAULT" if rules is None else str(rules)
    out, pos, text = [], 0, text.strip()
    while pos <= len(text):
        m = _SPLITTER.search(text, pos)
        if m is None:
            break
        out.append(m.group(1))
        if m.end() == pos and m.end() == len(text):
            break
        pos = m.end() if m.end() > pos else pos + 1
    return out


def _parse(rule: str) -> _Rule | None:
    m = _PARSER.match(rule)
    if m is None or m.end() != len(rule):
        unmatched = rule[m.end():] if m is not None else rule
        raise ValueError(f"invalid ssl.principal.mapping.rules rule `{rule}`, unmatched "
                         f"substring: `{unmatched}`")
    if m.group(1) is not None:
        return _Rule()
    if m.group(2) is not None:
        try:
            return _Rule(m.group(2), m.group(4), m.group(6) == "L", m.group(6) == "U")
        except re.error as e:
            raise ValueError(f"invalid ssl.principal.mapping.rules pattern {m.group(2)!r}: "
                             f"{e}") from None
    return None                       # empty rules are ignored
