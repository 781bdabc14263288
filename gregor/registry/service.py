"""The registry's operations, with Confluent's rules; I/O only through `write`.

Reads come from `RegistryState`; every change is a list of `_schemas` records handed to
`write(records)`, which returns once the records are read back into the state (read-your-
writes). One lock serializes changes inside an instance; across instances only the elected
leader writes, so ids (max id seen + 1) are never handed out twice.
"""
from __future__ import annotations

import threading

from . import errors, records
from .compatibility import LEVELS, check_level
from .records import SchemaValue
from .schema_types import TYPES, InvalidSchema, parse_schema
from .state import RegistryState, refs_key

DEFAULT_COMPATIBILITY = "BACKWARD"
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1


def parse_version(version, *, allow_latest: bool = True) -> int | str:
    """An int version or "latest" (from "latest" or -1); 42202 for anything else."""
    if isinstance(version, str):
        if allow_latest and version.lower() == "latest":
            return "latest"
        try:
            number = int(version)
        except ValueError:
            raise errors.invalid_version(version) from None
    elif isinstance(version, int) and not isinstance(version, bool):
        number = version
    else:
        raise errors.invalid_version(version)
    if number == -1 and allow_latest:
        return "latest"
    if not 1 <= number <= MAX_VERSION:
        raise errors.invalid_version(version)
    return number


class RegistryService:
    def __init__(self, state: RegistryState, write, state_lock=None):
        self.state = state
        self._write = write
        self.lock = threading.RLock()          # one change at a time
        # held while reading the state (the store's reader applies records under it)
        self.state_lock = state_lock if state_lock is not None else threading.RLock()
        self._parsed: dict[tuple, object] = {}

    # -- parsing ----------------------------------------------------------------------------
    def parse(self, schema_type: str, text: str, references, *, seen=()):
        cache_key = (schema_type, text, refs_key(references))
        parsed = self._parsed.get(cache_key)
        if parsed is not None:
            return parsed
        resolved = []
        for ref in references or ():
            sv = self._reference(ref)
            if (sv.subject, sv.version) in seen:
                raise errors.invalid_schema(f"references form a cycle at {sv.subject!r} "
                                            f"version {sv.version}")
            resolved.append((ref["name"], self.parse(sv.schema_type, sv.schema, sv.references,
                                                     seen=(*seen, (sv.subject, sv.version)))))
        try:
            parsed = parse_schema(schema_type, text, resolved)
        except InvalidSchema as e:
            raise errors.invalid_schema(f"{e}") from None
        if len(self._parsed) > 100_000:       # a bound on the parse cache
            self._parsed.clear()
        self._parsed[cache_key] = parsed
        return parsed

    def _reference(self, ref) -> SchemaValue:
        if not isinstance(ref, dict) or not isinstance(ref.get("subject"), str) \
                or not isinstance(ref.get("name"), str):
            raise errors.invalid_schema(f"a reference is {{name, subject, version}}, got {ref!r}")
        versions = self.state.subjects.get(ref["subject"], {})
        try:
            wanted = parse_version(ref.get("version"))
        except errors.RegistryError:
            raise errors.invalid_schema(f"reference {ref['name']!r}: version "
                                        f"{ref.get('version')!r} is not a version") from None
        if wanted == "latest":
            live = [v for v in versions.values() if not v.deleted]
            sv = max(live, key=lambda v: v.version) if live else None
        else:
            sv = versions.get(wanted)
        if sv is None:
            raise errors.invalid_schema(f"reference {ref['name']!r} names subject "
                                        f"{ref['subject']!r} version {ref.get('version')}, "
                                        "which does not exist")
        return sv

    def _request_schema(self, body: dict, normalize: bool):
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise errors.invalid_schema("the request needs a \"schema\" string")
        schema_type = body.get("schemaType") or "AVRO"
        if schema_type not in TYPES:
            raise errors.invalid_schema(f"unknown schemaType {schema_type!r}: one of "
                                        f"{', '.join(TYPES)}")
        references = body.get("references") or []
        if not isinstance(references, list):
            raise errors.invalid_schema("references must be a list")
        for r in references:
            if not isinstance(r, dict) or not isinstance(r.get("name"), str) \
                    or not isinstance(r.get("subject"), str):
                raise errors.invalid_schema(f"a reference is {{name, subject, version}}, "
                                            f"got {r!r}")
        references = [{"name": r["name"], "subject": r["subject"],
                       "version": self._reference(r).version} for r in references]
        parsed = self.parse(schema_type, body["schema"], references)
        text = parsed.normalized if normalize else parsed.canonical
        return schema_type, text, references, parsed

    # -- levels and modes -------------------------------------------------------------------
    def compatibility(self, subject: str | None) -> str:
        for key in ((subject, None) if subject is not None else (None,)):
            level = self.state.configs.get(key, {}).get("compatibilityLevel")
            if level:
                return level
        return DEFAULT_COMPATIBILITY

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.modes:
            return self.state.modes[subject]
        return self.state.modes.get(None, "READWRITE")

    def _check_writable(self, subject: str) -> None:
        if self.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    # -- subjects and versions --------------------------------------------------------------
    def subjects(self, deleted=False, deleted_only=False, prefix=None, offset=0, limit=-1):
        names = self.state.subject_names(deleted, deleted_only)
        if prefix:
            names = [n for n in names if n.startswith(prefix)]
        names = names[max(offset, 0):]
        return names if limit is None or limit < 0 else names[:limit]

    def versions(self, subject, deleted=False, deleted_only=False, offset=0, limit=-1):
        all_versions = self.state.live_versions(subject, deleted=True)
        if not all_versions:
            raise errors.subject_not_found(subject)
        out = [v.version for v in all_versions
               if (v.deleted if deleted_only else (deleted or not v.deleted))]
        if not out and not deleted and not deleted_only:
            raise errors.subject_not_found(subject)
        out = out[max(offset, 0):]
        return out if limit is None or limit < 0 else out[:limit]

    def get_version(self, subject, version, deleted=False) -> SchemaValue:
        wanted = parse_version(version)
        versions = self.state.subjects.get(subject)
        if not versions or (not deleted and all(v.deleted for v in versions.values())):
            raise errors.subject_not_found(subject)
        if wanted == "latest":
            candidates = [v for v in versions.values() if deleted or not v.deleted]
            return max(candidates, key=lambda v: v.version)
        sv = versions.get(wanted)
        if sv is None or (sv.deleted and not deleted):
            raise errors.version_not_found(wanted)
        return sv

    def lookup(self, subject, body, normalize=False, deleted=False) -> SchemaValue:
        if not self.state.subjects.get(subject):
            raise errors.subject_not_found(subject)
        schema_type, text, refs, _ = self._request_schema(body, normalize)
        key = refs_key(refs)
        for sv in reversed(self.state.live_versions(subject, deleted=deleted)):
            if self._same(sv, schema_type, text, key, normalize):
                return sv
        raise errors.schema_not_found()

    def _same(self, sv, schema_type, text, key, normalize) -> bool:
        """Is the stored version `sv` this schema? With normalize, compared normalized on
        both sides, so a version registered without normalize is found too."""
        if sv.schema_type != schema_type or refs_key(sv.references) != key:
            return False
        if sv.schema == text:
            return True
        if not normalize:
            return False
        try:
            return self.parse(sv.schema_type, sv.schema, sv.references).normalized == text
        except errors.RegistryError:
            return False

    def register(self, subject, body, normalize=False) -> int:
        if not isinstance(subject, str) or not subject or any(c < " " for c in subject):
            raise errors.invalid_schema(f"subject {subject!r} is not a valid subject name")
        with self.lock:
            mode = self.mode(subject)
            self._check_writable(subject)
            schema_type, text, refs, parsed = self._request_schema(body, normalize)
            wanted_id, wanted_version = body.get("id"), body.get("version")
            if mode != "IMPORT" and wanted_id not in (None, -1, 0):
                raise errors.operation_not_permitted(f"Subject {subject} is not in import mode")
            key = refs_key(refs)
            live = self.state.live_versions(subject)
            for sv in live:
                if self._same(sv, schema_type, text, key, normalize):
                    return sv.id              # idempotent: the same id, no new version
            if mode != "IMPORT":
                messages = self._incompatibilities(subject, parsed, live,
                                                   self.compatibility(subject))
                if messages:
                    raise errors.incompatible(subject, messages)
            existing = self.state.ids.get((schema_type, text, key))
            if mode == "IMPORT" and wanted_id not in (None, -1, 0):
                schema_id = self._import_id(wanted_id, existing, text)
            else:
                schema_id = existing if existing is not None else self.state.max_id + 1
            every = self.state.subjects.get(subject, {})
            if mode == "IMPORT" and wanted_version not in (None, -1, 0):
                version = parse_version(wanted_version, allow_latest=False)
                if version in every:
                    raise errors.operation_not_permitted(
                        f"Version {version} already exists in subject {subject}")
            else:
                version = max(every, default=0) + 1   # past soft-deleted versions too
            value = SchemaValue(subject, version, schema_id, text, schema_type, refs, False)
            self._write([records.schema_record(value)])
            return schema_id

    def _import_id(self, wanted_id, existing, text) -> int:
        if not isinstance(wanted_id, int) or isinstance(wanted_id, bool) or wanted_id < 1:
            raise errors.unprocessable(f"id {wanted_id!r} is not a schema id")
        taken = self.state.by_id.get(wanted_id)
        if taken is not None and taken.schema != text:
            raise errors.operation_not_permitted(
                f"Overwrite new schema with id {wanted_id} is not permitted.")
        return wanted_id

    def _incompatibilities(self, subject, parsed, live, level) -> list[str]:
        previous = [(sv.version, sv, self.parse(sv.schema_type, sv.schema, sv.references))
                    for sv in live]
        return check_level(parsed, previous, level)

    # -- compatibility tests ----------------------------------------------------------------
    def test_compatibility(self, subject, version, body, normalize=False, verbose=False):
        _, _, _, parsed = self._request_schema(body, normalize)
        level = self.compatibility(subject)
        live = self.state.live_versions(subject)
        if version is None:
            against = live
        else:
            wanted = parse_version(version)
            if wanted == "latest":
                against = live[-1:]
            else:
                if not live:
                    raise errors.subject_not_found(subject)
                against = [sv for sv in live if sv.version == wanted]
                if not against:
                    raise errors.version_not_found(wanted)
                # one named version: the level's direction, not its transitivity
                level = level.replace("_TRANSITIVE", "")
        messages = self._incompatibilities(subject, parsed, against, level)
        out = {"is_compatible": not messages}
        if verbose:
            out["messages"] = messages
        return out

    # -- deletes ----------------------------------------------------------------------------
    def delete_version(self, subject, version, permanent=False) -> int:
        wanted = parse_version(version)
        with self.lock:
            self._check_writable(subject)
            versions = self.state.subjects.get(subject)
            if not versions:
                raise errors.subject_not_found(subject)
            if wanted == "latest":
                live = [v for v in versions.values() if not v.deleted]
                if not live:
                    raise errors.subject_not_found(subject)
                sv = max(live, key=lambda v: v.version)
            else:
                sv = versions.get(wanted)
                if sv is None:
                    raise errors.version_not_found(wanted)
            refs = self.state.referenced_by(subject, sv.version)
            if refs:
                raise errors.reference_exists(
                    f"One or more references exist to the schema {{subject={subject}, "
                    f"version={sv.version}}}: ids {refs}")
            if permanent:
                if not sv.deleted:
                    raise errors.version_not_soft_deleted(subject, sv.version)
                self._write([(records.Key(records.SCHEMA, subject, sv.version).encode(), None)])
            else:
                if sv.deleted:
                    raise errors.version_soft_deleted(subject, sv.version)
                deleted = SchemaValue(sv.subject, sv.version, sv.id, sv.schema, sv.schema_type,
                                      list(sv.references), True)
                self._write([records.schema_record(deleted)])
            return sv.version

    def delete_subject(self, subject, permanent=False) -> list[int]:
        with self.lock:
            self._check_writable(subject)
            versions = self.state.subjects.get(subject)
            if not versions:
                raise errors.subject_not_found(subject)
            live = sorted(v for v, sv in versions.items() if not sv.deleted)
            for v in sorted(versions):
                if self.state.referenced_by(subject, v):
                    raise errors.reference_exists(
                        f"One or more references exist to the schema {{subject={subject}, "
                        f"version={v}}}")
            if permanent:
                if live:
                    raise errors.subject_not_soft_deleted(subject)
                every = sorted(versions)
                batch = [(records.Key(records.SCHEMA, subject, v).encode(), None) for v in every]
                if subject in self.state.configs:
                    batch.append(records.config_record(subject, None))
                if subject in self.state.modes:
                    batch.append(records.mode_record(subject, None))
                self._write(batch)
                return every
            if not live:
                raise errors.subject_soft_deleted(subject)
            self._write([records.delete_subject_record(subject, max(versions))])
            return live

    # -- config and mode --------------------------------------------------------------------
    def get_config(self, subject=None, default_to_global=False) -> dict:
        if subject is None:
            return {"compatibilityLevel": self.compatibility(None)}
        own = self.state.configs.get(subject, {}).get("compatibilityLevel")
        if own:
            return {"compatibilityLevel": own}
        if default_to_global:
            return {"compatibilityLevel": self.compatibility(None)}
        raise errors.subject_level_compatibility_not_configured(subject)

    def set_config(self, subject, body) -> dict:
        if not isinstance(body, dict):
            raise errors.unprocessable("the body must be a JSON object")
        level = body.get("compatibility", body.get("compatibilityLevel"))
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise errors.invalid_compatibility_level(level)
        level = level.upper()
        with self.lock:
            if subject is not None:
                self._check_writable(subject)
            value = {"compatibilityLevel": level}
            if isinstance(body.get("normalize"), bool):
                value["normalize"] = body["normalize"]
            self._write([records.config_record(subject, value)])
        return {"compatibility": level}

    def delete_config(self, subject=None) -> dict:
        with self.lock:
            previous = self.compatibility(subject)
            if subject is not None and subject not in self.state.subjects \
                    and subject not in self.state.configs:
                raise errors.subject_not_found(subject)
            if (subject in self.state.configs):
                self._write([records.config_record(subject, None)])
        return {"compatibilityLevel": previous}

    def get_mode(self, subject=None, default_to_global=False) -> dict:
        if subject is None or subject in self.state.modes:
            return {"mode": self.mode(subject)}
        if default_to_global:
            return {"mode": self.mode(None)}
        raise errors.subject_level_mode_not_configured(subject)

    def set_mode(self, subject, body, force=False) -> dict:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()
        with self.lock:
            if mode == "IMPORT" and not force:
                has = (self.state.subjects.get(subject) if subject is not None
                       else self.state.subjects)
                if has:
                    raise errors.operation_not_permitted(
                        "Cannot import since found existing subjects")
            self._write([records.mode_record(subject, mode)])
        return {"mode": mode}

    def delete_mode(self, subject) -> dict:
        with self.lock:
            previous = self.mode(subject)
            if subject in self.state.modes:
                self._write([records.mode_record(subject, None)])
        return {"mode": previous}
