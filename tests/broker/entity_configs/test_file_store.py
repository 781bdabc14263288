"""The single-node entity config store: durable, keys kept, other writers noticed."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from gregor.broker.entity_configs.file_store import (FILE_NAME, EntityStoreError,
                                                     FileEntityConfigStore)


def test_alter_keeps_the_other_keys_and_removes_empty_entities(tmp_path):
    store = FileEntityConfigStore(tmp_path).load()
    seen = []
    store.listen(lambda path, config: seen.append((path, config)))

    async def main():
        await store.alter("users/alice", {"SCRAM-SHA-256": "salt=c2FsdA==,stored_key=a,"
                                          "server_key=b,iterations=4096"})
        await store.alter("users/alice", {"producer_byte_rate": "1024"})
        await store.alter("users/alice", {"SCRAM-SHA-256": None})
    asyncio.run(main())
    assert store.get("users/alice") == {"producer_byte_rate": "1024"}
    assert [p for p, _ in seen] == ["users/alice"] * 3
    assert "SCRAM-SHA-256" in seen[1][1] and "producer_byte_rate" in seen[1][1]
    store.alter_now("users/alice", {"producer_byte_rate": None})
    assert store.get("users/alice") == {} and store.entities() == {}
    assert seen[-1] == ("users/alice", {})
    doc = json.loads((tmp_path / FILE_NAME).read_text())
    assert doc == {"version": 1, "entities": {}}
    assert os.stat(tmp_path / FILE_NAME).st_mode & 0o777 == 0o600


def test_a_reopened_store_has_what_was_written(tmp_path):
    FileEntityConfigStore(tmp_path).alter_now("clients/<default>", {"consumer_byte_rate": "5"})
    again = FileEntityConfigStore(tmp_path).load()
    assert again.entities("clients") == {"clients/<default>": {"consumer_byte_rate": "5"}}
    assert again.entities("users") == {}


def test_another_process_change_is_noticed_and_not_lost(tmp_path):
    broker_side = FileEntityConfigStore(tmp_path).load()
    broker_side.alter_now("users/bob", {"producer_byte_rate": "1"})
    seen = []
    broker_side.listen(lambda path, config: seen.append((path, config)))
    # an offline command changes the same user in another process
    code = ("from gregor.broker.entity_configs.file_store import FileEntityConfigStore as S;"
            f"S({str(tmp_path)!r}).load().alter_now('users/bob', {{'consumer_byte_rate': '2'}})")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert broker_side.refresh()
    assert broker_side.get("users/bob") == {"producer_byte_rate": "1", "consumer_byte_rate": "2"}
    assert seen == [("users/bob", {"producer_byte_rate": "1", "consumer_byte_rate": "2"})]
    assert not broker_side.refresh()          # nothing new


def test_a_damaged_file_is_reported_not_ignored(tmp_path):
    (tmp_path / FILE_NAME).write_text("{not json")
    with pytest.raises(EntityStoreError, match="restore it from a backup"):
        FileEntityConfigStore(tmp_path).load()


def test_bad_paths_are_refused(tmp_path):
    store = FileEntityConfigStore(tmp_path).load()
    with pytest.raises(ValueError):
        store.alter_now("topics/x", {"a": "b"})
