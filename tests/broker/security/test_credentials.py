"""SCRAM credentials in a single node's entity config file (shared with quotas) and the
KIP-554 rules over them (mirrors the checks of Kafka's ZkAdminManager and
UserScramCredentialsCommandTest)."""
from __future__ import annotations

import json
import os
import stat


from gregor.broker.security import scram_admin
from gregor.broker.security.credentials import (FILE_NAME, LEGACY_FILE_NAME,
                                                FileCredentialStore)
from gregor.broker.security.sasl.scram import ScramServer
from gregor.protocol.errors import ErrorCode
from gregor.security.scram import (SCRAM_SHA_256, SCRAM_SHA_512, ScramClient,
                                   credential_from_password)


def upsert(name, mech=SCRAM_SHA_256, password="pw", iterations=4096, salt=b"salty-salt"):
    return {"name": name, "mechanism": mech.type_code, "iterations": iterations, "salt": salt,
            "salted_password": mech.salted_password(password, salt, iterations)}


def delete(name, mech=SCRAM_SHA_256):
    return {"name": name, "mechanism": mech.type_code}


def alter(store, deletions=(), upsertions=()):
    results, changes = scram_admin.plan_alter(store, list(deletions), list(upsertions))
    if changes:
        store.write_user_configs(changes)
    return {r["user"]: (r["error_code"], r["error_message"]) for r in results}


def test_store_round_trip_file_mode_and_reload(tmp_path):
    store = FileCredentialStore(tmp_path)
    assert store.credential("alice", "SCRAM-SHA-256") is None
    cred = credential_from_password(SCRAM_SHA_256, "pw")
    store.store.alter_now("users/alice", {"producer_byte_rate": "1024"})     # a quota
    # the map carries every key; only the SCRAM ones are the credentials' to write
    store.write_user_configs({"alice": {"SCRAM-SHA-256": cred.to_text(),
                                        "producer_byte_rate": "0"}})
    path = tmp_path / FILE_NAME
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert FileCredentialStore(tmp_path).credential("alice", "SCRAM-SHA-256") == cred
    # another writer (gregor users --data-dir) changes the file: readers see it
    FileCredentialStore(tmp_path).write_user_configs({"bob": {"SCRAM-SHA-512": cred.to_text()}})
    assert store.credential("bob", "SCRAM-SHA-512") == cred
    assert store.user_config("alice")["producer_byte_rate"] == "1024"      # other keys kept
    store.write_user_configs({"alice": {}})
    assert store.credential("alice", "SCRAM-SHA-256") is None
    assert store.user_config("alice") == {"producer_byte_rate": "1024"}     # the quota stays
    store.store.alter_now("users/alice", {"producer_byte_rate": None})
    assert json.loads(path.read_text())["entities"].keys() == {"users/bob"}
    assert not list(tmp_path.glob("*.tmp"))


def test_credentials_of_an_older_data_directory_are_moved_in(tmp_path):
    cred = credential_from_password(SCRAM_SHA_256, "pw")
    (tmp_path / LEGACY_FILE_NAME).write_text(json.dumps(
        {"version": 1, "users": {"old user": {"SCRAM-SHA-256": cred.to_text()}}}))
    assert FileCredentialStore(tmp_path).credential("old user", "SCRAM-SHA-256") == cred
    assert not (tmp_path / LEGACY_FILE_NAME).exists()
    assert (tmp_path / (LEGACY_FILE_NAME + ".migrated")).exists()
    assert FileCredentialStore(tmp_path).credential("old user", "SCRAM-SHA-256") == cred


def test_malformed_file_is_reported_and_authenticates_no_one(tmp_path, caplog):
    (tmp_path / FILE_NAME).write_text("{not json")
    assert FileCredentialStore(tmp_path).credential("alice", "SCRAM-SHA-256") is None
    assert "cannot read SCRAM credentials" in caplog.text


def test_alter_then_describe_and_authenticate(tmp_path):
    store = FileCredentialStore(tmp_path)
    assert alter(store, upsertions=[upsert("alice"), upsert("alice", SCRAM_SHA_512, iterations=8192)]) \
        == {"alice": (0, None)}
    body = scram_admin.describe(store, None)
    assert body["results"] == [{"user": "alice", "error_code": 0, "error_message": None,
                                "credential_infos": [{"mechanism": 1, "iterations": 4096},
                                                     {"mechanism": 2, "iterations": 8192}]}]
    cred = store.credential("alice", "SCRAM-SHA-512")
    client = ScramClient(SCRAM_SHA_512, "alice", "pw")
    server = ScramServer(SCRAM_SHA_512, store.credential)
    first = server.evaluate(client.first().encode())
    client.verify(server.evaluate(client.final(first).encode()))
    assert cred.iterations == 8192 and "salted" not in json.dumps(body)


def test_alter_errors_as_kafka_reports_them(tmp_path):
    store = FileCredentialStore(tmp_path)
    alter(store, upsertions=[upsert("carol")])
    got = alter(store,
                deletions=[delete("nobody"), delete("", SCRAM_SHA_256),
                           {"name": "x", "mechanism": 9}],
                upsertions=[upsert("few", iterations=1000), upsert("many", iterations=20000),
                            {**upsert("odd"), "mechanism": 0},
                            upsert("twice"), upsert("twice"), upsert("dave")])
    assert got == {
        "nobody": (ErrorCode.RESOURCE_NOT_FOUND,
                   "Attempt to delete a user credential that does not exist"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "x": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "twice": (ErrorCode.DUPLICATE_RESOURCE,
                  "A user credential cannot be altered twice in the same request"),
        "dave": (0, None),
    }
    assert set(store.all_user_configs()) == {"carol", "dave"}


def test_a_failing_alteration_leaves_the_users_other_alterations_undone(tmp_path):
    store = FileCredentialStore(tmp_path)
    got = alter(store, deletions=[delete("erin", SCRAM_SHA_512)], upsertions=[upsert("erin")])
    assert got["erin"][0] == ErrorCode.RESOURCE_NOT_FOUND
    assert store.credential("erin", "SCRAM-SHA-256") is None


def test_delete_then_describe_explicit_users(tmp_path):
    store = FileCredentialStore(tmp_path)
    alter(store, upsertions=[upsert("frank"), upsert("frank", SCRAM_SHA_512)])
    assert alter(store, deletions=[delete("frank")]) == {"frank": (0, None)}
    body = scram_admin.describe(store, ["frank", "ghost", "frank2", "", "dup", "dup"])
    got = {r["user"]: (r["error_code"], r["error_message"], r["credential_infos"])
           for r in body["results"]}
    assert got["frank"] == (0, None, [{"mechanism": 2, "iterations": 4096}])
    assert got["ghost"] == (ErrorCode.RESOURCE_NOT_FOUND,
                            "Attempt to describe a user credential that does not exist: ghost", [])
    assert got[""][0] == ErrorCode.RESOURCE_NOT_FOUND
    assert got["dup"][0] == ErrorCode.DUPLICATE_RESOURCE
    assert [r["user"] for r in body["results"]] == ["frank", "ghost", "frank2", "", "dup"]
