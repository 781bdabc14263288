"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) over a credential store,
with Kafka's rules and error texts (ZkAdminManager). Sans-I/O: `describe` reads the store,
`plan_alter` returns the results and the new config maps; the handler writes them.

The client sends a salt and the salted password, never the password; the broker derives and
stores StoredKey / ServerKey. Describe never returns salts or keys, only the mechanisms and
their iterations.
"""
from __future__ import annotations

from collections import Counter

from ...protocol.errors import ErrorCode
from ...security.scram import BY_TYPE, MAX_ITERATIONS, MIN_ITERATIONS, credential_from_salted
from .credentials import credential_of

_EMPTY = "Username must not be empty"
_UNKNOWN_MECH = "Unknown SCRAM mechanism"


def _infos(config: dict) -> list[dict]:
    out = []
    for code, mech in sorted(BY_TYPE.items()):
        cred = credential_of(config, mech.name)
        if cred is not None:
            out.append({"mechanism": code, "iterations": cred.iterations})
    return out


def describe(store, users: list[str] | None) -> dict:
    """The DescribeUserScramCredentials response body."""
    results = []
    if not users:
        for user, cfg in sorted(store.all_user_configs().items()):
            infos = _infos(cfg)
            if infos:
                results.append({"user": user, "error_code": ErrorCode.NONE,
                                "error_message": None, "credential_infos": infos})
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                "results": results}
    counts = Counter(users)
    for user in dict.fromkeys(users):            # each user once, in request order
        entry = {"user": user, "error_code": ErrorCode.NONE, "error_message": None,
                 "credential_infos": []}
        results.append(entry)
        if not user:
            entry.update(error_code=ErrorCode.RESOURCE_NOT_FOUND, error_message=_EMPTY)
        elif counts[user] > 1:
            entry.update(error_code=ErrorCode.DUPLICATE_RESOURCE,
                         error_message="Cannot describe SCRAM credentials for the same user "
                                       f"twice in a single request: {user}")
        else:
            infos = _infos(store.user_config(user))
            if infos:
                entry["credential_infos"] = infos
            else:
                entry.update(error_code=ErrorCode.RESOURCE_NOT_FOUND,
                             error_message="Attempt to describe a user credential that does "
                                           f"not exist: {user}")
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "results": results}


def plan_alter(store, deletions: list[dict], upsertions: list[dict]
               ) -> tuple[list[dict], dict[str, dict[str, str]]]:
    """(results, {user: new config map}) for an AlterUserScramCredentials request. A user with
    any invalid alteration gets one error and none of its alterations is applied."""
    results: list[dict] = []
    failed: dict[str, tuple[int, str]] = {}
    for d in deletions:
        if not d["name"]:
            failed[d["name"]] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, _EMPTY)
        elif d["mechanism"] not in BY_TYPE:
            failed[d["name"]] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, _UNKNOWN_MECH)
    for u in upsertions:
        if not u["name"]:
            failed[u["name"]] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, _EMPTY)
        elif u["mechanism"] not in BY_TYPE:
            failed[u["name"]] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, _UNKNOWN_MECH)
        elif u["iterations"] < MIN_ITERATIONS:
            failed[u["name"]] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u["iterations"] > MAX_ITERATIONS:
            failed[u["name"]] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    for user, (code, message) in failed.items():
        results.append({"user": user, "error_code": code, "error_message": message})

    pairs = Counter((a["name"], a["mechanism"]) for a in [*upsertions, *deletions]
                    if a["name"] not in failed)
    duplicated = {name for (name, _), n in pairs.items() if n > 1}
    for user in sorted(duplicated):
        results.append({"user": user, "error_code": ErrorCode.DUPLICATE_RESOURCE,
                        "error_message": "A user credential cannot be altered twice in the "
                                         "same request"})
    candidates = list(dict.fromkeys(name for name, _ in pairs if name not in duplicated))
    configs = {user: store.user_config(user) for user in candidates}
    missing = {d["name"] for d in deletions if d["name"] in configs
               and BY_TYPE[d["mechanism"]].name not in configs[d["name"]]}
    for user in candidates:
        if user in missing:
            results.append({"user": user, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                            "error_message": "Attempt to delete a user credential that does "
                                             "not exist"})
    changes: dict[str, dict[str, str]] = {}
    for user in candidates:
        if user in missing:
            continue
        cfg = configs[user]
        for d in deletions:
            if d["name"] == user:
                cfg.pop(BY_TYPE[d["mechanism"]].name, None)
        for u in upsertions:
            if u["name"] == user:
                mech = BY_TYPE[u["mechanism"]]
                cred = credential_from_salted(mech, bytes(u["salt"]),
                                              bytes(u["salted_password"]), u["iterations"])
                cfg[mech.name] = cred.to_text()
        changes[user] = cfg
        results.append({"user": user, "error_code": ErrorCode.NONE, "error_message": None})
    return results, changes
