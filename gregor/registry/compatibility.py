"""Compatibility levels, as Confluent's registry applies them to a subject's versions.

BACKWARD: the new schema reads data written with the latest version; FORWARD: the latest
reads the new one's data; FULL: both. The _TRANSITIVE levels check every live version, not
only the latest; NONE checks nothing. Versions are checked newest first and the check stops at
the first incompatible one; its messages are Confluent's verbose ones: each incompatibility,
then `{oldSchemaVersion: N}`, `{oldSchema: '...'}` and the level.
"""
from __future__ import annotations

from .schema_types import check

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE")


def check_level(new, previous: list, level: str) -> list[str]:
    """`previous`: [(version, stored_value, parsed)] oldest first. [] when compatible."""
    level = level.upper()
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    base = level.replace("_TRANSITIVE", "")
    for version, stored, old in reversed(against):
        found = []
        if base in ("BACKWARD", "FULL"):
            found += check(new, old, "new", "old")
        if base in ("FORWARD", "FULL"):
            found += check(old, new, "old", "new")
        if found:
            return [*(f.message() for f in found), f"{{oldSchemaVersion: {version}}}",
                    f"{{oldSchema: '{stored.schema}'}}",
                    f"{{validateFields: 'false', compatibility: '{level}'}}"]
    return []
