"""The registry's state in memory, rebuilt by applying the `_schemas` records in order.

Sans-I/O: `apply(key_bytes, value_bytes, offset)` is all the store calls; everything else
reads. Ids are derived from the log (the largest id seen), as Confluent's registry does, so
any instance that has read the log to its end hands out the same next id.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from . import records
from .records import RecordFormatError, SchemaValue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredSchema:
    """One schema as `/schemas/ids/{id}` serves it."""
    id: int
    schema_type: str
    schema: str
    references: tuple      # ((name, subject, version), ...)


def refs_key(references) -> tuple:
    return tuple((r["name"], r["subject"], int(r["version"])) for r in references or ())


class RegistryState:
    def __init__(self):
        self.subjects: dict[str, dict[int, SchemaValue]] = {}
        self.by_id: dict[int, StoredSchema] = {}
        # (schema_type, text, references) -> id: the same schema reuses its id everywhere
        self.ids: dict[tuple, int] = {}
        self.configs: dict[str | None, dict] = {}
        self.modes: dict[str | None, str] = {}
        self.max_id = 0
        self.offset = -1        # offset of the last record applied
        self.skipped = 0        # records that could not be read

    # -- applying the log -------------------------------------------------------------------
    def apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        self.offset = max(self.offset, offset)
        try:
            k = records.decode_key(key)
            v = records.decode_value(k, value)
        except RecordFormatError as e:
            self.skipped += 1
            log.warning("_schemas offset %d skipped: %s", offset, e)
            return
        if k.keytype == records.SCHEMA:
            self._apply_schema(k, v)
        elif k.keytype == records.CONFIG:
            if v is None:
                self.configs.pop(k.subject, None)
            else:
                self.configs[k.subject] = v
        elif k.keytype == records.MODE:
            if v is None or not isinstance(v.get("mode"), str):
                self.modes.pop(k.subject, None)
            else:
                self.modes[k.subject] = v["mode"]
        elif k.keytype == records.DELETE_SUBJECT and v is not None:
            upto = v.get("version")
            for ver, sv in self.subjects.get(k.subject, {}).items():
                if isinstance(upto, int) and ver <= upto:
                    sv.deleted = True

    def _apply_schema(self, k, v: SchemaValue | None) -> None:
        versions = self.subjects.get(k.subject)
        if v is None:                       # hard delete of one version
            if versions is not None:
                gone = versions.pop(k.version, None)
                if not versions:
                    del self.subjects[k.subject]
                if gone is not None:
                    self._forget_id_if_unused(gone.id)
            return
        if versions is None:
            versions = self.subjects[k.subject] = {}
        versions[k.version] = v
        stored = StoredSchema(v.id, v.schema_type, v.schema, refs_key(v.references))
        self.by_id.setdefault(v.id, stored)
        self.ids.setdefault((v.schema_type, v.schema, stored.references), v.id)
        self.max_id = max(self.max_id, v.id)

    def _forget_id_if_unused(self, schema_id: int) -> None:
        for versions in self.subjects.values():
            for sv in versions.values():
                if sv.id == schema_id:
                    return
        stored = self.by_id.pop(schema_id, None)
        if stored is not None:
            self.ids.pop((stored.schema_type, stored.schema, stored.references), None)

    # -- reading ----------------------------------------------------------------------------
    def live_versions(self, subject: str, deleted: bool = False) -> list[SchemaValue]:
        vs = self.subjects.get(subject, {})
        return [vs[v] for v in sorted(vs) if deleted or not vs[v].deleted]

    def subject_names(self, deleted: bool = False, deleted_only: bool = False) -> list[str]:
        out = []
        for s, vs in self.subjects.items():
            live = any(not v.deleted for v in vs.values())
            if deleted_only:
                if not live:
                    out.append(s)
            elif live or deleted:
                out.append(s)
        return sorted(out)

    def uses_of(self, schema_id: int, deleted: bool = False) -> list[SchemaValue]:
        out = []
        for s in sorted(self.subjects):
            for ver in sorted(self.subjects[s]):
                sv = self.subjects[s][ver]
                if sv.id == schema_id and (deleted or not sv.deleted):
                    out.append(sv)
        return out

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live schemas whose references name (subject, version)."""
        ids = set()
        for versions in self.subjects.values():
            for sv in versions.values():
                if sv.deleted:
                    continue
                for r in sv.references:
                    if r.get("subject") == subject and int(r.get("version", -1)) == version:
                        ids.add(sv.id)
        return sorted(ids)

    def schema_count(self) -> int:
        return len(self.by_id)
