"""Subscription regexes of KIP-848 members, matched as Kafka matches them: RE2 syntax, the
whole topic name must match.

RE2 (google-re2) runs in time linear in the name, whatever the pattern: a pattern comes from a
client, and Python's backtracking `re` can take exponential time on some ((a*)*b), which
would stall the broker's event loop. Without google-re2 installed, `re` is used: same results
for the usual patterns, without that protection.
"""
from __future__ import annotations

try:
    import re2 as _engine
    _OPTIONS = _engine.Options()
    _OPTIONS.log_errors = False          # an invalid client pattern is an answer, not a log

    def _compile(pattern: str):
        return _engine.compile(pattern, options=_OPTIONS)
    ENGINE = "re2"
except ImportError:                      # pragma: no cover - depends on the environment
    import re as _engine

    def _compile(pattern: str):
        return _engine.compile(pattern)
    ENGINE = "re"

# Patterns come from clients: remember a bounded number of compiled ones.
CACHE_SIZE = 1000
_cache: dict[str, object] = {}


class InvalidRegex(ValueError):
    pass


def compile_pattern(pattern: str):
    p = _cache.get(pattern)
    if p is None:
        try:
            p = _compile(pattern)
        except Exception as e:           # re2.error / re.error
            msg = e.args[0] if e.args else e
            if isinstance(msg, bytes):
                msg = msg.decode(errors="replace")
            raise InvalidRegex(str(msg)) from None
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[pattern] = p
    return p


def matching(pattern: str, names) -> list[str]:
    """The names the pattern matches whole."""
    p = compile_pattern(pattern)
    return [n for n in names if p.fullmatch(n) is not None]
