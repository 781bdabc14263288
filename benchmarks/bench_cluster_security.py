"""A secured cluster beside a PLAINTEXT one, confluent-kafka as the client, ratios in one run.

    .venv/bin/python benchmarks/bench_cluster_security.py [--records 1000000] [--repeat 3]
                                                          [--changes 5]

Runs `gregor cluster --brokers 3` and `gregor cluster --brokers 3 --secure` (TLS and
SCRAM-SHA-512 for the client and between the brokers, the ACL authorizer, ZooKeeper ACLs) at
the same time and measures, alternating between them:
1. acks=all throughput: --records records (10 B keys, 100 B values, linger.ms=5, one
   partition, RF 3, min.insync.replicas=2) from one producer, best of --repeat rounds each, and
   the ratio secured / PLAINTEXT (the issue asks TLS to cost what OpenSSL costs: >= 0.8x for a
   single connection; here the followers' fetches are encrypted too);
2. how long a change takes to reach every broker of the secured cluster (--changes times): a
   new SCRAM user created through one broker (AlterUserScramCredentials, then ZooKeeper's
   /config/changes) until each broker accepts its login, and, with the authorizer, a new ACL
   (CreateAcls, then /kafka-acl-changes) until each broker lets that user see the topic
   (target: within a second).
The machine is shared and noisy: compare the ratio within one run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_cluster import LocalCluster, create, throughput  # noqa: E402


def _login_works(client: dict, broker: str, user: str, password: str) -> bool:
    """One SCRAM login and a Metadata round trip against one broker (gregor's admin client
    fails at once on a refused login, where librdkafka retries until its timeout)."""
    from gregor.client.admin import AdminClient
    from gregor.client.errors import ClientError
    cfg = {**client, "bootstrap.servers": broker, "sasl.username": user,
           "sasl.password": password}
    try:
        with AdminClient(cfg) as admin:
            admin.describe_cluster(timeout=5)
        return True
    except (ClientError, OSError):
        return False


def _until_all(check, brokers: list[str], timeout: float = 30.0) -> float:
    """Seconds until check(broker) holds for every broker (each polled until it does)."""
    t0 = time.perf_counter()
    pending = list(brokers)
    while pending:
        pending = [b for b in pending if not check(b)]
        if pending and time.perf_counter() - t0 > timeout:
            return float("inf")
        if pending:
            time.sleep(0.01)
    return time.perf_counter() - t0


def credential_propagation(c: LocalCluster, n: int) -> list[float]:
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    brokers = c.bootstrap.split(",")
    first = {**c.client, "bootstrap.servers": brokers[0]}
    admin = AdminClient(first)
    out = []
    for i in range(n):
        user, password = f"bench-user-{i}", f"secret-{i}"
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        for f in admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion(user, info, password.encode())]).values():
            f.result(30)
        out.append(_until_all(lambda b: _login_works(c.client, b, user, password), brokers))
    return out


def acl_propagation(c: LocalCluster, n: int) -> list[float] | None:
    """A new ACL (user may DESCRIBE a topic) until every broker's Metadata shows the topic to
    that user; None when the broker has no ACL admin API (no authorizer in this build)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType)
    from gregor.client.admin import AdminClient as GregorAdmin
    brokers = c.bootstrap.split(",")
    admin = AdminClient({**c.client, "bootstrap.servers": brokers[0]})
    user, password = "bench-acl-user", "bench-acl-secret"
    credential_propagation_user(admin, user, password)
    out = []
    for i in range(n):
        topic = f"bench-acl-{i}"
        create(c.bootstrap, topic, 1, 3, client=c.client)
        binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL,
                             f"User:{user}", "*", AclOperation.DESCRIBE,
                             AclPermissionType.ALLOW)
        try:
            for f in admin.create_acls([binding]).values():
                f.result(30)
        except KafkaException as e:
            print(f"  (no ACL admin API: {e})")
            return None

        def sees(b, topic=topic):
            cfg = {**c.client, "bootstrap.servers": b, "sasl.username": user,
                   "sasl.password": password}
            try:
                with GregorAdmin(cfg) as a:
                    return topic in a.list_topics(timeout=5)
            except Exception:
                return False
        out.append(_until_all(sees, brokers))
    return out


def credential_propagation_user(admin, user: str, password: str) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, \
        UserScramCredentialUpsertion
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    for f in admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(user, info, password.encode())]).values():
        f.result(30)


def summary(xs: list[float]) -> str:
    return (f"median {statistics.median(xs):.3f} s, max {max(xs):.3f} s "
            f"({', '.join(f'{x:.3f}' for x in xs)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--changes", type=int, default=5)
    args = ap.parse_args()
    plain = LocalCluster(3).start()
    secure = None
    try:
        secure = LocalCluster(3, secure=True).start()
        for c in (plain, secure):
            create(c.bootstrap, "rf3", 1, 3, client=c.client, **{"min.insync.replicas": 2})
        tp = {"plain": [], "secure": []}
        for _ in range(args.repeat):
            for name, c in (("plain", plain), ("secure", secure)):
                tp[name].append(throughput(c.bootstrap, "rf3", args.records, "all",
                                           client=c.client))
        creds = credential_propagation(secure, args.changes)
        acls = acl_propagation(secure, args.changes)
    finally:
        plain.stop()
        if secure is not None:
            secure.stop()
    best = {k: max(v) for k, v in tp.items()}
    print(f"\ngregor cluster, 3 brokers on one {os.cpu_count()}-core machine, acks=all, RF 3, "
          f"min.insync.replicas 2, {args.records:,} records x {args.repeat} rounds (best)")
    for name, label in (("plain", "PLAINTEXT"), ("secure", "--secure (SASL_SSL everywhere)")):
        print(f"  {label:<31} {best[name]:>10,.0f} msgs/s  "
              f"(rounds {', '.join(f'{x:,.0f}' for x in tp[name])})")
    print(f"  ratio secured / PLAINTEXT {best['secure'] / best['plain']:.2f}x")
    print(f"  a new SCRAM user accepted by all 3 brokers: {summary(creds)} (target: within 1 s)")
    if acls is not None:
        print(f"  a new ACL applied by all 3 brokers:         {summary(acls)} "
              "(target: within 1 s)")
    print("  (each time includes one login and Metadata round trip per broker polled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
