"""ZooKeeper digest logins and Kafka's secure znode ACLs (zookeeper.set.acl), against a real
ZooKeeper: what the brokers create is readable by everyone but changeable only with the
brokers' credentials, and SCRAM credentials are not readable at all without them (Kafka's
ZkData.defaultAcls, as its ZkAuthorizationTest checks)."""
from __future__ import annotations

import asyncio

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import Permissions

from gregor.broker.cluster import znodes as z
from gregor.broker.cluster.metadata_store import MetadataStore, split_connect
from gregor.broker.cluster.zk_security import (ZkSecurity, default_acls, sensitive,
                                               zk_security)
from gregor.broker.config import BrokerConfig, ConfigError
from gregor.broker.security.credentials_zk import ZkCredentials
from gregor.security.scram import SCRAM_SHA_512, credential_from_password

JAAS = 'org.apache.zookeeper.server.auth.DigestLoginModule required username="{}" ' \
       'password="{}";'
SECURE = ZkSecurity(True, "gregor", "zk-secret")


def test_kafkas_default_acls():
    """ZkData.defaultAcls: creator ALL plus world READ, creator only under the sensitive
    roots, the old consumer path open, and ZooKeeper's open default when not secure."""
    open_ = default_acls(False, "/brokers/ids")
    assert [(a.id.scheme, a.perms) for a in open_] == [("world", Permissions.ALL)]
    acl = default_acls(True, "/brokers/topics/t")
    assert sorted((a.id.scheme, a.perms) for a in acl) == [("auth", Permissions.ALL),
                                                           ("world", Permissions.READ)]
    for path in ("/config/users", "/config/users/alice", "/config/brokers/0"):
        assert sensitive(path)
        assert [(a.id.scheme, a.perms) for a in default_acls(True, path)] == \
            [("auth", Permissions.ALL)]
    assert not sensitive("/config/topics/t")
    assert [a.id.scheme for a in default_acls(True, "/consumers")] == ["world"]


def test_settings(tmp_path):
    assert not zk_security(BrokerConfig({})).authenticated
    with pytest.raises(ConfigError, match="zookeeper.set.acl=true needs the brokers to log in"):
        zk_security(BrokerConfig({"zookeeper.set.acl": "true"}))
    f = tmp_path / "jaas.conf"
    f.write_text("// the brokers' ZooKeeper login\nClient {\n  " + JAAS.format("gregor", "pw")
                 + "\n};\nKafkaServer { org.x.Y required; };\n")
    sec = zk_security(BrokerConfig({"zookeeper.set.acl": "true",
                                    "gregor.zookeeper.jaas.file": str(f)}))
    assert (sec.set_acl, sec.username, sec.auth_data()) == (True, "gregor",
                                                            [("digest", "gregor:pw")])
    assert "pw" not in repr(sec)
    inline = zk_security(BrokerConfig({"gregor.zookeeper.jaas.config": JAAS.format("u", "p")}))
    assert inline.authenticated and not inline.set_acl
    f.write_text("Server { " + JAAS.format("a", "b") + " };")
    with pytest.raises(ConfigError, match="has no Client section"):
        zk_security(BrokerConfig({"gregor.zookeeper.jaas.file": str(f)}))
    with pytest.raises(ConfigError, match="username"):
        zk_security(BrokerConfig({"gregor.zookeeper.jaas.config":
                                  'org.x.DigestLoginModule required password="secret-x";'}))
    with pytest.raises(ConfigError) as e:
        zk_security(BrokerConfig({"gregor.zookeeper.jaas.config": 'x required pw="secret-y"'}))
    assert "secret-y" not in str(e.value)


def client(connect: str, auth: tuple[str, str] | None = None) -> KazooClient:
    hosts, chroot = split_connect(connect)
    c = KazooClient(hosts=hosts + chroot,
                    auth_data=[("digest", f"{auth[0]}:{auth[1]}")] if auth else None)
    c.start(10)
    return c


def refused(fn) -> bool:
    try:
        fn()
    except NoAuthError:
        return True
    return False


def test_znodes_are_readable_by_all_and_changeable_only_by_the_brokers(zk_connect):
    async def create():
        store = MetadataStore(zk_connect, session_timeout_ms=4000, security=SECURE)
        await store.start()
        await store.cluster_id("c1")
        info = z.BrokerInfo(0, "localhost", 9092, None, 0, ("PLAINTEXT://localhost:9092",))
        await store.register_broker(info)
        await store.try_become_controller(0, 0)
        return store
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(create())
    creds = ZkCredentials.connect(zk_connect, security=SECURE)
    try:
        creds.write_user_configs({"alice": {"SCRAM-SHA-512": credential_from_password(
            SCRAM_SHA_512, "alice-secret").to_text()}})
        anon, wrong, broker = client(zk_connect), client(zk_connect, ("gregor", "nope")), \
            client(zk_connect, ("gregor", "zk-secret"))
        try:
            for c in (anon, wrong):
                # the cluster's layout is public, as in Kafka
                assert c.get_children("/brokers/ids") == ["0"]
                assert c.get("/controller")[0]
                assert c.get("/cluster/id")[0]
                # but nothing can be changed, added or removed
                assert refused(lambda: c.set("/controller", b"{}"))
                assert refused(lambda: c.delete("/controller"))
                assert refused(lambda: c.set(z.CONTROLLER_EPOCH, b"99"))
                assert refused(lambda: c.create("/brokers/topics/evil", b"{}"))
                assert refused(lambda: c.create("/brokers/ids/7", b"{}", ephemeral=True))
                assert refused(lambda: c.create("/admin/delete_topics/x", b""))
                assert refused(lambda: c.set("/config/users/alice", b"{}"))
                # and credentials cannot even be read
                assert refused(lambda: c.get("/config/users/alice"))
                assert refused(lambda: c.get_children("/config/users"))
            # change notices are readable (they name users, never credentials)
            notice = anon.get_children("/config/changes")
            assert notice and anon.get("/config/changes/" + notice[0])[0]
            # the brokers' login may do everything
            assert b"SCRAM-SHA-512" in broker.get("/config/users/alice")[0]
            broker.create("/admin/delete_topics/x", b"")
            broker.delete("/admin/delete_topics/x")
            acl, _ = broker.get_acls("/config/users/alice")
            assert [(a.id.scheme, a.perms) for a in acl] == [("digest", Permissions.ALL)]
            assert acl[0].id.id.startswith("gregor:")
            acl, _ = broker.get_acls("/brokers/ids/0")
            assert sorted(a.id.scheme for a in acl) == ["digest", "world"]
        finally:
            for c in (anon, wrong, broker):
                c.stop()
                c.close()
        # the chroot itself is protected too
        root = KazooClient(hosts=split_connect(zk_connect)[0])
        root.start(10)
        try:
            assert refused(lambda: root.delete(split_connect(zk_connect)[1], recursive=True))
            assert refused(lambda: root.create(split_connect(zk_connect)[1] + "/evil", b""))
        finally:
            root.stop()
            root.close()
    finally:
        creds.close()
        loop.run_until_complete(store.close())
        loop.close()


def test_without_set_acl_znodes_stay_open(zk_connect):
    async def go():
        store = MetadataStore(zk_connect, session_timeout_ms=4000)
        await store.start()
        await store.cluster_id("c2")
        await store.close()
    asyncio.run(go())
    anon = client(zk_connect)
    try:
        acl, _ = anon.get_acls("/cluster/id")
        assert [(a.id.scheme, a.perms) for a in acl] == [("world", Permissions.ALL)]
        anon.set("/cluster/id", anon.get("/cluster/id")[0])
    finally:
        anon.stop()
        anon.close()


def test_gregor_users_needs_the_brokers_login_on_a_protected_cluster(zk_connect, tmp_path):
    """`gregor users --zookeeper` on znodes created with zookeeper.set.acl: refused with what
    to give, then done with --zk-config (the brokers' properties file)."""
    from click.testing import CliRunner

    from gregor.cli.main import cli
    jaas = tmp_path / "zk-jaas.conf"
    jaas.write_text("Client { " + JAAS.format("gregor", "zk-secret") + " };\n")
    props = tmp_path / "server.properties"
    props.write_text(f"zookeeper.set.acl=true\ngregor.zookeeper.jaas.file={jaas}\n")
    pw = tmp_path / "pw"
    pw.write_text("bob-secret\n")
    ZkCredentials.connect(zk_connect, security=SECURE).close()   # the brokers' chroot

    def users(*args):
        return CliRunner().invoke(cli, ["users", *args, "--zookeeper", zk_connect])
    refused_ = users("add", "bob", "--password-file", str(pw))
    assert refused_.exit_code != 0 and "--zk-config" in refused_.output, refused_.output
    done = users("add", "bob", "--password-file", str(pw), "--zk-config", str(props))
    assert done.exit_code == 0, done.output
    listed = users("list", "--zk-config", str(props))
    assert "user-principal 'bob'" in listed.output
    broker = client(zk_connect, ("gregor", "zk-secret"))
    try:
        acl, _ = broker.get_acls("/config/users/bob")
        assert [a.id.scheme for a in acl] == ["digest"]
    finally:
        broker.stop()
        broker.close()


def test_gregor_acls_needs_the_brokers_login_on_a_protected_cluster(zk_connect, tmp_path):
    """`gregor acls --zookeeper` likewise, with --zk-config or Kafka's
    --authorizer-properties spelling; the ACL znodes it writes carry the secure ACLs."""
    from click.testing import CliRunner

    from gregor.cli.main import cli
    jaas = tmp_path / "zk-jaas.conf"
    jaas.write_text("Client { " + JAAS.format("gregor", "zk-secret") + " };\n")
    props = tmp_path / "server.properties"
    props.write_text(f"zookeeper.set.acl=true\ngregor.zookeeper.jaas.file={jaas}\n")

    async def brokers_chroot():
        store = MetadataStore(zk_connect, session_timeout_ms=4000, security=SECURE)
        await store.start()
        await store.close()
    asyncio.run(brokers_chroot())
    acl = ["acls", "add", "--allow-principal", "User:alice", "--operation", "Read"]
    refused_ = CliRunner().invoke(cli, [*acl, "--topic", "t1", "--zookeeper", zk_connect])
    assert refused_.exit_code != 0 and "--zk-config" in refused_.output, refused_.output
    done = CliRunner().invoke(cli, [*acl, "--topic", "t1", "--zookeeper", zk_connect,
                                    "--zk-config", str(props)])
    assert done.exit_code == 0, done.output
    kafka_spelling = CliRunner().invoke(cli, [
        *acl, "--topic", "t2", "--authorizer-properties", f"zookeeper.connect={zk_connect}",
        "--authorizer-properties", "zookeeper.set.acl=true",
        "--authorizer-properties", f"gregor.zookeeper.jaas.file={jaas}"])
    assert kafka_spelling.exit_code == 0, kafka_spelling.output
    anon = client(zk_connect)
    try:
        for topic in ("t1", "t2"):
            assert b"User:alice" in anon.get(f"/kafka-acl/Topic/{topic}")[0]
            assert refused(lambda: anon.set(f"/kafka-acl/Topic/{topic}", b"{}"))
            acl_, _ = anon.get_acls(f"/kafka-acl/Topic/{topic}")
            assert sorted(a.id.scheme for a in acl_) == ["digest", "world"]
        assert refused(lambda: anon.create("/kafka-acl-changes/acl_changes_", b"Topic:t1",
                                           sequence=True))
    finally:
        anon.stop()
        anon.close()
