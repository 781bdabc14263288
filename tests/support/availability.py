"""Is every broker of a cluster serving, as a real client sees it? For fault tests.

    timings = wait_available(c, "topic", 3, within=60.0)  # raises AssertionError past `within`

A broker serves when a fresh confluent-kafka client bootstrapped at it alone gets its Metadata
answer (librdkafka's ApiVersions, then Metadata; `orig_broker_name` says who answered) listing
every broker of the cluster and a leader for every partition of the topic; the cluster is
whole when, moreover, every broker's answer shows every partition's ISR full. A broker that
stepped out of the cluster closes such a connection, so the probe fails until it is back.
"""
from __future__ import annotations

import time

# One probe's wait for an answer: a fresh librdkafka client's connect, ApiVersions and
# Metadata take well under a second on a quiet machine, several on a loaded one (a probe
# that times out counts as "no answer", so a short one fails correct brokers).
PROBE_TIMEOUT_S = 5.0


def metadata_from(broker, topic: str, timeout: float = PROBE_TIMEOUT_S):
    """The topic's metadata as `broker` answers it (None if it does not answer)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    # log_level 0: a refused connection is what is being probed, not worth librdkafka's line
    admin = AdminClient({"bootstrap.servers": broker.bootstrap,
                         "socket.timeout.ms": int(PROBE_TIMEOUT_S * 1000),
                         "reconnect.backoff.ms": 50, "log_level": 0})
    try:
        md = admin.list_topics(topic, timeout=timeout)
    except KafkaException:
        return None
    # the answer of the bootstrap connection is named "<host:port>/bootstrap", id -1
    ours = md.orig_broker_id == broker.broker_id or \
        md.orig_broker_name.split("/")[0] == broker.bootstrap
    return md if ours else None


def describe(md, topic: str) -> str:
    if md is None:
        return "no answer"
    t = md.topics.get(topic)
    parts = {} if t is None else {p: (m.leader, sorted(m.isrs)) for p, m in
                                  sorted(t.partitions.items())}
    return f"brokers {sorted(md.brokers)}, (leader, ISR) per partition {parts}"


def serving(md, topic: str, partitions: int, brokers: set[int]) -> bool:
    if md is None or set(md.brokers) != brokers:
        return False
    t = md.topics.get(topic)
    return t is not None and not t.error and len(t.partitions) == partitions and all(
        p.leader in brokers for p in t.partitions.values())


def whole(md, topic: str, partitions: int, brokers: set[int]) -> bool:
    return serving(md, topic, partitions, brokers) and all(
        set(p.isrs) == set(p.replicas) for p in md.topics[topic].partitions.values())


def wait_available(c, topic: str, partitions: int, within: float,
                   since: float | None = None) -> dict:
    """Until every running broker of cluster `c` answers Metadata naming every broker and a
    leader for each partition (`serving`) and then with every ISR full (`whole`), at most
    `within` seconds after `since` (time.monotonic(), default now). Returns the seconds from
    `since` to each; raises AssertionError with what each broker last answered."""
    since = time.monotonic() if since is None else since
    running = [b for b in c.brokers if b.running]
    ids = {b.broker_id for b in running}
    seen: dict[str, float] = {}
    last: dict[int, object] = {}
    while True:
        answers = {b.broker_id: metadata_from(b, topic) for b in running}
        last.update(answers)
        now = time.monotonic() - since
        if "serving" not in seen and all(serving(md, topic, partitions, ids)
                                         for md in answers.values()):
            seen["serving"] = now
        if "serving" in seen and all(whole(md, topic, partitions, ids)
                                     for md in answers.values()):
            seen["whole"] = now
            return seen
        if now > within:
            raise AssertionError(
                f"not every broker serving with a full ISR within {within:.1f}s "
                f"(serving after {seen.get('serving', 'never')}): " + "; ".join(
                    f"broker {b}: {describe(md, topic)}" for b, md in sorted(last.items())))
        time.sleep(0.05)
