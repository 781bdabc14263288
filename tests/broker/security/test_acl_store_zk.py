"""ACLs in ZooKeeper, Kafka's layout: znode paths and JSON, change notifications in Kafka's
two formats, versioned conditional writes that lose nothing under concurrent writers, every
store applying the others' changes (and znodes written the way kafka-acls writes them), old
notifications purged, and the offline CLI (--zookeeper / --authorizer-properties)."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from gregor.broker.cluster.metadata_store import MetadataStore
from gregor.broker.security import acl_store_zk as zkstore
from gregor.protocol.acl import (ANY_FILTER, AccessControlEntry, AclBinding,
                                 AclOperation as Op, AclPermissionType as Perm,
                                 PatternType as PT, ResourcePattern, ResourceType as RT)
from gregor.broker.security.acl_store import AclService
from gregor.broker.security.acl_store_zk import ZkAclStore, decode_change, encode_change
from gregor.broker.security.authorizer import AclAuthorizer
from gregor.broker.security.principal import KafkaPrincipal
from tests.support.broker import REPO_ROOT

READ = AccessControlEntry("User:alice", "*", Op.READ, Perm.ALLOW)
WRITE = AccessControlEntry("User:alice", "*", Op.WRITE, Perm.ALLOW)
TOPIC = ResourcePattern(RT.TOPIC, "t1", PT.LITERAL)
PREFIX = ResourcePattern(RT.GROUP, "app-", PT.PREFIXED)
TXN = ResourcePattern(RT.TRANSACTIONAL_ID, "tx", PT.LITERAL)
ALICE = KafkaPrincipal("User", "alice")


def test_paths_and_change_formats_are_kafkas():
    assert zkstore.resource_path(TOPIC) == "/kafka-acl/Topic/t1"
    assert zkstore.resource_path(TXN) == "/kafka-acl/TransactionalId/tx"
    assert zkstore.resource_path(PREFIX) == "/kafka-acl-extended/prefixed/Group/app-"
    assert encode_change(TOPIC) == ("/kafka-acl-changes", b"TOPIC:t1")
    directory, data = encode_change(PREFIX)
    assert directory == "/kafka-acl-extended-changes"
    assert json.loads(data) == {"version": 1, "resourceType": "GROUP", "name": "app-",
                                "patternType": "PREFIXED"}
    assert decode_change(*encode_change(PREFIX)) == PREFIX
    assert decode_change("/kafka-acl-changes", b"TRANSACTIONAL_ID:a:b") == \
        ResourcePattern(RT.TRANSACTIONAL_ID, "a:b", PT.LITERAL)
    assert decode_change("/kafka-acl-changes", b"Topic:t1") == TOPIC
    with pytest.raises(ValueError):
        decode_change("/kafka-acl-changes", b"no-separator")
    assert zkstore.change_sequence("acl_changes_0000000042") == 42


async def _service(connect):
    md = MetadataStore(connect, session_timeout_ms=6000)
    await md.start()
    svc = AclService(AclAuthorizer(), ZkAclStore(md))
    await svc.start()
    return md, svc


async def _close(*pairs):
    for md, svc in pairs:
        await svc.close()
        await md.close()


async def _until(predicate, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_two_brokers_see_each_others_changes(zk_connect):
    async def main():
        a, b = await _service(zk_connect), await _service(zk_connect)
        assert await a[1].create([AclBinding(TOPIC, READ), AclBinding(PREFIX, READ)]) == \
            [None, None]
        await _until(lambda: b[1].authorizer.entries(PREFIX) == {READ}, "B to see A's ACLs")
        assert b[1].authorizer.authorize(ALICE, "10.0.0.1", Op.READ, RT.GROUP, "app-1")
        # Kafka's JSON at Kafka's paths, and a notification in each of Kafka's formats
        zk = a[0].client
        data, stat = zk.get("/kafka-acl/Topic/t1")
        assert json.loads(data) == {"version": 1, "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read",
             "host": "*"}]}
        assert [zk.get("/kafka-acl-changes/" + n)[0]
                for n in zk.get_children("/kafka-acl-changes")] == [b"TOPIC:t1"]
        assert len(zk.get_children("/kafka-acl-extended-changes")) == 1
        # a removal by B: the znode goes, A follows
        removed = await b[1].delete([ANY_FILTER])
        assert len(removed[0][1]) == 2
        assert zk.exists("/kafka-acl/Topic/t1") is None
        await _until(lambda: len(a[1].authorizer) == 0, "A to see B's removal")
        assert not a[1].authorizer.authorize(ALICE, "10.0.0.1", Op.READ, RT.GROUP, "app-1",
                                             log_denied=False)
        await _close(a, b)
    asyncio.run(main())


def test_concurrent_writers_lose_nothing(zk_connect):
    async def main():
        a, b = await _service(zk_connect), await _service(zk_connect)

        async def add(svc, who):
            for i in range(15):
                e = AccessControlEntry(f"User:{who}{i}", "*", Op.READ, Perm.ALLOW)
                assert await svc.create([AclBinding(TOPIC, e)]) == [None]
        await asyncio.gather(add(a[1], "a"), add(b[1], "b"))
        data, _ = a[0].client.get("/kafka-acl/Topic/t1")
        assert len(json.loads(data)["acls"]) == 30
        await _until(lambda: len(a[1].authorizer.entries(TOPIC)) == 30 and
                     len(b[1].authorizer.entries(TOPIC)) == 30, "both to hold all 30")
        await _close(a, b)
    asyncio.run(main())


def test_znodes_written_as_kafka_acls_writes_them_are_applied(zk_connect):
    """What Kafka's AclAuthorizer does for kafka-acls --authorizer-properties
    zookeeper.connect: the resource znode, then a sequential change notification."""
    async def main():
        a = await _service(zk_connect)
        zk = a[0].client
        zk.create("/kafka-acl/TransactionalId/tx",
                  b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
                  b'"operation":"Write","host":"*"}]}', makepath=True)
        zk.create("/kafka-acl-changes/acl_changes_", b"TransactionalId:tx", sequence=True)
        await _until(lambda: a[1].authorizer.authorize(
            ALICE, "10.0.0.1", Op.WRITE, RT.TRANSACTIONAL_ID, "tx", log_denied=False),
            "the kafka-acls-written ACL to apply")
        zk.create("/kafka-acl-extended/prefixed/Topic/logs-",
                  b'{"version":1,"acls":[{"principal":"User:*","permissionType":"Deny",'
                  b'"operation":"All","host":"*"}]}', makepath=True)
        zk.create("/kafka-acl-extended-changes/acl_changes_",
                  b'{"version":1,"resourceType":"TOPIC","name":"logs-","patternType":'
                  b'"PREFIXED"}', sequence=True)
        await _until(lambda: a[1].authorizer.entries(
            ResourcePattern(RT.TOPIC, "logs-", PT.PREFIXED)), "the prefixed ACL to apply")
        await _close(a)
        # a broker starting later reads it all
        b = await _service(zk_connect)
        assert len(b[1].authorizer) == 2
        await _close(b)
    asyncio.run(main())


def test_old_notifications_are_purged(zk_connect, monkeypatch):
    monkeypatch.setattr(zkstore, "CHANGE_EXPIRATION_S", 0)

    async def main():
        a = await _service(zk_connect)
        for i in range(3):
            await a[1].create([AclBinding(ResourcePattern(RT.TOPIC, f"p{i}", PT.LITERAL),
                                          READ)])
        zk = a[0].client
        await _until(lambda: len(zk.get_children("/kafka-acl-changes")) == 1,
                     "all but the newest notification to be purged")
        await _close(a)
    asyncio.run(main())


def test_offline_cli_on_zookeeper(zk_connect):
    def gregor(*args):
        proc = subprocess.run([sys.executable, "-m", "gregor", "acls", *args],
                              capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout
    gregor("add", "--allow-principal", "User:ANONYMOUS", "--operation", "ClusterAction",
           "--cluster", "--zookeeper", zk_connect)
    gregor("add", "--allow-principal", "User:bob", "--producer", "--topic", "out-",
           "--resource-pattern-type", "prefixed",
           "--authorizer-properties", f"zookeeper.connect={zk_connect}")
    listed = gregor("list", "--zookeeper", zk_connect)
    assert "(principal=User:ANONYMOUS, host=*, operation=CLUSTER_ACTION, " \
           "permissionType=ALLOW)" in listed
    assert "name=out-, patternType=PREFIXED" in listed

    async def main():
        a = await _service(zk_connect)
        assert a[1].authorizer.authorize(KafkaPrincipal("User", "bob"), "10.0.0.1", Op.WRITE,
                                         RT.TOPIC, "out-1")
        await _close(a)
    asyncio.run(main())
    gregor("remove", "--topic", "out-", "--resource-pattern-type", "prefixed", "--force",
           "--zookeeper", zk_connect)
    assert "out-" not in gregor("list", "--zookeeper", zk_connect)
