"""Broker configuration: Kafka's names, Kafka's defaults, Java-properties files and overrides.

Sources, later ones winning: the defaults below, a `--config` file in Java properties format,
`--set key=value` pairs, then the command line's own options (--listen, --data-dir, --broker-id).
Names are Kafka's (`log.segment.bytes`); Python spellings (`log_segment_bytes`) are accepted.
Unknown names are kept and reported once with a warning, as Kafka does.

Topic-level settings (`segment.bytes`, `retention.ms`, ...) default to their broker-level
synonyms (`log.segment.bytes`, `log.retention.ms`, ...); `topic_defaults()` resolves them.
"""
from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from typing import Any

from .security.settings import listener_setting

log = logging.getLogger("gregor.broker.config")

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class Setting:
    name: str
    type: str            # int | long | bool | string | list | double | class | password
    default: Any
    doc: str


def _s(name, type_, default, doc):
    return Setting(name, type_, default, doc)


# Broker settings we read. Defaults are Kafka's unless the comment says why not.
BROKER_SETTINGS: dict[str, Setting] = {s.name: s for s in [
    _s("broker.id", "int", 0, "Id of this broker (Kafka: node.id/broker.id; we default to 0 "
       "because a single node needs no id allocation)."),
    _s("node.id", "int", None, "Synonym of broker.id."),
    _s("listeners", "list", "PLAINTEXT://127.0.0.1:9092",
       "Where to listen. Kafka binds all interfaces by default; we default to loopback so a "
       "test broker is never reachable from the network by accident."),
    _s("advertised.listeners", "list", None, "Addresses given to clients in Metadata, per "
       "listener name (default: listeners)."),
    _s("listener.security.protocol.map", "string",
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "Security protocol of each listener name: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL "
       "(docs/security.md)."),
    _s("inter.broker.listener.name", "string", None,
       "Listener brokers use to reach each other (default: the one named after "
       "security.inter.broker.protocol)."),
    _s("security.inter.broker.protocol", "string", "PLAINTEXT",
       "Protocol between brokers; only PLAINTEXT."),
    _s("log.dirs", "list", None, "Data directory (one; several are not supported)."),
    _s("log.dir", "string", "/tmp/kafka-logs", "Data directory used when log.dirs is unset."),
    _s("num.partitions", "int", 1, "Partitions of auto-created topics."),
    _s("default.replication.factor", "int", 1, "Replication factor of auto-created topics."),
    _s("auto.create.topics.enable", "bool", True, "Create topics on Metadata/Produce."),
    _s("delete.topic.enable", "bool", True, "Allow DeleteTopics."),
    _s("log.segment.bytes", "int", 1073741824, "Segment size."),
    _s("log.roll.ms", "long", None, "Segment age before rolling (overrides log.roll.hours)."),
    _s("log.roll.hours", "int", 168, "Segment age before rolling."),
    _s("log.retention.ms", "long", None, "Retention time (overrides minutes/hours)."),
    _s("log.retention.minutes", "int", None, "Retention time (overrides hours)."),
    _s("log.retention.hours", "int", 168, "Retention time."),
    _s("log.retention.bytes", "long", -1, "Retention size per partition (-1: unlimited)."),
    _s("log.retention.check.interval.ms", "long", 300000, "How often retention runs."),
    _s("log.cleanup.policy", "list", "delete", "delete, compact, or compact,delete."),
    _s("log.cleaner.enable", "bool", True, "Run the log cleaner (compacted topics)."),
    _s("log.cleaner.threads", "int", 1, "Cleaner threads."),
    _s("log.cleaner.io.max.bytes.per.second", "double", 1.7976931348623157e308,
       "Bytes per second the cleaners read and write at most, together."),
    _s("log.cleaner.dedupe.buffer.size", "long", 134217728,
       "Memory of the cleaners' key maps, split between the threads; a pass whose keys do "
       "not fit cleans in rounds."),
    _s("log.cleaner.backoff.ms", "long", 15000, "Sleep when no log needs cleaning."),
    _s("log.cleaner.delete.retention.ms", "long", 86400000,
       "Default delete.retention.ms: how long tombstones and transaction markers stay."),
    _s("log.cleaner.min.cleanable.ratio", "double", 0.5,
       "Default min.cleanable.dirty.ratio."),
    _s("log.cleaner.min.compaction.lag.ms", "long", 0, "Default min.compaction.lag.ms."),
    _s("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, "Default max.compaction.lag.ms."),
    _s("log.index.interval.bytes", "int", 4096, "Bytes between offset-index entries."),
    _s("log.index.size.max.bytes", "int", 10485760, "Maximum offset-index size."),
    _s("log.flush.interval.messages", "long", LONG_MAX, "Messages between fsyncs."),
    _s("log.flush.interval.ms", "long", None, "Time between fsyncs."),
    _s("log.message.timestamp.type", "string", "CreateTime", "CreateTime or LogAppendTime."),
    _s("log.message.timestamp.difference.max.ms", "long", LONG_MAX,
       "Largest allowed |record timestamp - broker time| for CreateTime topics."),
    _s("log.message.timestamp.before.max.ms", "long", LONG_MAX,
       "Largest allowed age of a record timestamp for CreateTime topics."),
    _s("log.message.timestamp.after.max.ms", "long", LONG_MAX,
       "Largest allowed lead of a record timestamp for CreateTime topics."),
    _s("message.max.bytes", "int", 1048588, "Largest record batch accepted."),
    _s("compression.type", "string", "producer", "Only 'producer' (keep what producers send)."),
    _s("min.insync.replicas", "int", 1, "In-sync replicas needed to accept acks=all writes."),
    _s("unclean.leader.election.enable", "bool", False,
       "Cluster mode: when every in-sync replica of a partition is dead, elect an out-of-sync "
       "one (available again, losing what only the ISR had) instead of waiting offline."),
    _s("socket.request.max.bytes", "int", 104857600, "Largest request frame accepted."),
    _s("socket.send.buffer.bytes", "int", 102400, "SO_SNDBUF (-1: OS default)."),
    _s("socket.receive.buffer.bytes", "int", 102400, "SO_RCVBUF (-1: OS default)."),
    _s("connections.max.idle.ms", "long", 600000, "Close connections idle this long."),
    _s("max.connections", "int", 1000,
       "Cap on open client connections. Kafka's default is unlimited; one Python process has a "
       "bounded file-descriptor budget and memory, so we cap it."),
    _s("queued.max.requests", "int", 500,
       "Requests one connection may have in flight (pipelined) before the broker stops reading "
       "from it; this bounds the memory a single client can pin."),
    _s("queued.max.request.bytes", "long", 536870912,
       "Bytes of large requests being received at once, over all connections; clients wait "
       "(the broker stops reading them) beyond it. Kafka's default is -1 (unbounded); a "
       "single Python process needs a bound so hostile or many clients cannot exhaust memory."),
    _s("fetch.max.bytes", "int", 57671680, "Largest fetch response."),
    _s("max.incremental.fetch.session.cache.slots", "int", 1000,
       "Fetch sessions (KIP-227) kept at most; a full cache answers new ones sessionless."),
    _s("min.incremental.fetch.session.eviction.ms", "int", 120000,
       "Fetch sessions unused (or existing) this long may be evicted for a new one."),
    _s("producer.id.expiration.ms", "int", 86400000, "Idle producer state expiry."),
    _s("transaction.max.timeout.ms", "int", 900000, "Largest transaction timeout accepted."),
    _s("transaction.state.log.num.partitions", "int", 50,
       "Partitions of __transaction_state (fixed once the topic exists)."),
    _s("transaction.state.log.segment.bytes", "int", 104857600,
       "Segment size of __transaction_state."),
    _s("transactional.id.expiration.ms", "int", 604800000,
       "A transactional id idle this long (no transaction) is forgotten."),
    _s("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000,
       "How often transactions older than their timeout are looked for and aborted."),
    _s("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000,
       "How often expired transactional ids are removed."),
    # Authorization (gregor/broker/security/authorizer.py, docs/acls.md).
    _s("authorizer.class.name", "string", "",
       "Authorizer of requests: kafka.security.authorizer.AclAuthorizer, "
       "org.apache.kafka.metadata.authorizer.StandardAuthorizer or "
       "gregor.broker.security.authorizer.AclAuthorizer (all the same ACL authorizer); "
       "empty: no authorizer, every request is allowed."),
    _s("super.users", "string", None,
       "Principals allowed everything, semicolon-separated: User:admin;User:broker."),
    _s("allow.everyone.if.no.acl.found", "bool", False,
       "With an authorizer: allow an operation on a resource no ACL applies to."),
    _s("request.timeout.ms", "int", 30000,
       "How long coordinators wait for their own writes (internal topics, markers) to commit."),
    _s("num.network.threads", "int", 3, "Accepted for compatibility; gregor uses one loop."),
    _s("num.io.threads", "int", 8, "Accepted for compatibility; gregor uses one loop."),
    _s("offsets.topic.replication.factor", "int", 3,
       "Replication factor of __consumer_offsets in a cluster (capped to the live brokers "
       "when it is created)."),
    _s("transaction.state.log.replication.factor", "int", 3, "Accepted for compatibility."),
    _s("transaction.state.log.min.isr", "int", 2, "Accepted for compatibility."),
    _s("group.initial.rebalance.delay.ms", "int", 3000,
       "How long the first rebalance of an empty group waits for more members (tests use 0)."),
    _s("group.min.session.timeout.ms", "int", 6000, "Smallest session timeout a member may ask."),
    _s("group.max.session.timeout.ms", "int", 1800000, "Largest session timeout a member may ask."),
    _s("group.max.size", "int", 2147483647, "Members one consumer group may have."),
    _s("group.consumer.heartbeat.interval.ms", "int", 5000,
       "Heartbeat interval given to members of consumer-protocol (KIP-848) groups."),
    _s("group.consumer.session.timeout.ms", "int", 45000,
       "A consumer-protocol group member silent this long is removed from its group."),
    _s("group.consumer.min.session.timeout.ms", "int", 45000,
       "Smallest consumer.session.timeout.ms a consumer-protocol group may set."),
    _s("group.consumer.max.session.timeout.ms", "int", 60000,
       "Largest consumer.session.timeout.ms a consumer-protocol group may set."),
    _s("group.consumer.min.heartbeat.interval.ms", "int", 5000,
       "Smallest consumer.heartbeat.interval.ms a consumer-protocol group may set."),
    _s("group.consumer.max.heartbeat.interval.ms", "int", 15000,
       "Largest consumer.heartbeat.interval.ms a consumer-protocol group may set."),
    _s("group.consumer.max.size", "int", 2147483647,
       "Members one consumer-protocol (KIP-848) group may have."),
    _s("group.consumer.assignors", "list", "uniform,range",
       "Server-side assignors of consumer-protocol groups; the first is the default."),
    # Share groups (KIP-932), with Kafka 4.2's names and defaults.
    _s("group.share.heartbeat.interval.ms", "int", 5000,
       "Heartbeat interval given to share-group members (unless the group sets its own)."),
    _s("group.share.min.heartbeat.interval.ms", "int", 5000,
       "Smallest share.heartbeat.interval.ms a share group may set."),
    _s("group.share.max.heartbeat.interval.ms", "int", 15000,
       "Largest share.heartbeat.interval.ms a share group may set."),
    _s("group.share.session.timeout.ms", "int", 45000,
       "A share-group member silent this long is removed and its acquired records released."),
    _s("group.share.min.session.timeout.ms", "int", 45000,
       "Smallest share.session.timeout.ms a share group may set."),
    _s("group.share.max.session.timeout.ms", "int", 60000,
       "Largest share.session.timeout.ms a share group may set."),
    _s("group.share.max.size", "int", 200, "Members one share group may have."),
    _s("group.share.record.lock.duration.ms", "int", 30000,
       "How long a share-group member holds the records it acquired before they come back."),
    _s("group.share.min.record.lock.duration.ms", "int", 15000,
       "Smallest share.record.lock.duration.ms a share group may set."),
    _s("group.share.max.record.lock.duration.ms", "int", 60000,
       "Largest share.record.lock.duration.ms a share group may set."),
    _s("group.share.delivery.count.limit", "int", 5,
       "Deliveries of one record to a share group before it is archived (2-10)."),
    _s("group.share.partition.max.record.locks", "int", 2000,
       "In-flight records one share-partition keeps; past it only those records are handed out."),
    _s("group.share.max.share.sessions", "int", 2000,
       "Share sessions this broker keeps (SHARE_SESSION_LIMIT_REACHED past it)."),
    _s("share.coordinator.state.topic.num.partitions", "int", 50,
       "Partitions of __share_group_state (fixed once the topic exists)."),
    _s("share.coordinator.state.topic.replication.factor", "int", 3,
       "Replication factor of __share_group_state in a cluster (capped by the brokers there)."),
    _s("offsets.topic.num.partitions", "int", 50,
       "Partitions of __consumer_offsets (fixed once the topic exists)."),
    _s("offsets.topic.segment.bytes", "int", 104857600, "Segment size of __consumer_offsets."),
    _s("offsets.retention.minutes", "int", 10080,
       "Committed offsets of a group are kept this long after it became empty (or, for "
       "commits without group management, after the commit)."),
    _s("offsets.retention.check.interval.ms", "long", 600000,
       "How often expired committed offsets are looked for."),
    _s("offset.metadata.max.bytes", "int", 4096, "Largest metadata string of a committed offset."),
    _s("offsets.commit.timeout.ms", "int", 5000,
       "How long an offset commit waits for its write to commit before failing."),
    _s("cluster.id", "string", None, "Cluster id; generated and stored in meta.properties."),
    _s("zookeeper.connect", "string", None,
       "host:port[,host:port...][/chroot] of ZooKeeper. Unset: a single-node broker (no "
       "cluster). Set: this broker joins the cluster whose metadata lives there."),
    _s("zookeeper.session.timeout.ms", "int", 18000,
       "ZooKeeper session timeout: how long after a broker dies its registration (and, for the "
       "controller, /controller) disappears."),
    _s("zookeeper.connection.timeout.ms", "int", None,
       "How long to wait for the first ZooKeeper connection (unset: the session timeout)."),
    _s("broker.rack", "string", None, "Rack of this broker, registered in ZooKeeper."),
    _s("controlled.shutdown.enable", "bool", True,
       "On a clean stop, ask the controller to move this broker's leaderships first."),
    _s("controlled.shutdown.max.retries", "int", 3,
       "Attempts at a controlled shutdown before stopping anyway."),
    _s("controlled.shutdown.retry.backoff.ms", "long", 5000,
       "Pause between controlled-shutdown attempts."),
    _s("replica.lag.time.max.ms", "long", 30000,
       "A follower not caught up with its leader for this long leaves the ISR."),
    _s("replica.fetch.wait.max.ms", "int", 500, "Longest a follower's fetch waits for data."),
    _s("replica.high.watermark.checkpoint.interval.ms", "long", 5000,
       "How often the high watermarks are saved to replication-offset-checkpoint."),
    _s("replica.fetch.min.bytes", "int", 1, "Bytes a follower's fetch waits for."),
    _s("replica.fetch.max.bytes", "int", 1048576,
       "Bytes a follower asks per partition (at least one batch is always returned)."),
    _s("replica.fetch.response.max.bytes", "int", 10485760,
       "Bytes a follower asks per fetch, over all partitions."),
    _s("replica.fetch.backoff.ms", "int", 1000,
       "Pause of a follower after a failed fetch (leader unreachable, an error)."),
    _s("replica.socket.timeout.ms", "int", 30000,
       "A follower gives up on a leader's answer after this long and reconnects."),
    _s("quota.window.num", "int", 11,
       "Samples client quotas (byte rates, request time, connection rates) are measured over."),
    _s("quota.window.size.seconds", "int", 1, "Time span of one client quota sample."),
    _s("controller.quota.window.num", "int", 11,
       "Samples of the controller mutation quota (its token bucket holds num x size x rate)."),
    _s("controller.quota.window.size.seconds", "int", 1,
       "Time span of one controller mutation quota sample."),
    # gregor's own settings (no Kafka equivalent).
    _s("gregor.fsync.acks.all", "bool", True,
       "acks=all produce requests are answered once their records are fsynced (group commit "
       "off the event loop: one fsync per partition per round, however many requests it "
       "covers). false = Kafka's single-replica behaviour (answered after the append)."),
    _s("gregor.max.partitions", "int", -1,
       "Partitions this broker hosts at most (-1: derived from the open-file limit: each "
       "partition keeps ~3 descriptors open, and running out of descriptors would stop the "
       "broker from accepting connections). Topic creation past it gets POLICY_VIOLATION."),
    _s("gregor.log.cleaner.process", "bool", True,
       "Run each cleaner thread's passes in a worker process: cleaning is Python code, and on "
       "a thread it would compete with the event loop for the GIL (produce latency shows it). "
       "false = plain threads, as in Kafka."),
    _s("gregor.shutdown.timeout.ms", "long", 10000,
       "How long a graceful shutdown waits for in-flight requests."),
    # the Schema Registry in the broker's process (gregor/registry/embedded.py)
    _s("schema.registry.listeners", "string", None,
       "Serve Confluent's Schema Registry API here too, e.g. http://127.0.0.1:8081 (port 0: a "
       "free one); it is a Kafka client of the cluster like a standalone `gregor registry`."),
    _s("schema.registry.kafkastore.bootstrap.servers", "string", None,
       "Where the embedded registry connects (default: this broker's first listener)."),
    _s("schema.registry.kafkastore.config.file", "string", None,
       "Client settings for the embedded registry (security.protocol, sasl.*, ssl.*), "
       "Kafka's properties format, for a secured listener."),
]}


def _add_security_settings() -> None:
    from .security.settings import CLUSTER_SECURITY_SETTINGS, SECURITY_SETTINGS
    for spec in SECURITY_SETTINGS + CLUSTER_SECURITY_SETTINGS:
        BROKER_SETTINGS[spec[0]] = Setting(*spec)


_add_security_settings()

# Topic-level settings and their broker-level synonyms (None: no broker synonym).
TOPIC_SETTINGS: dict[str, tuple[str, str | None, Any]] = {
    # name: (type, broker synonym, default when no synonym)
    "cleanup.policy": ("list", "log.cleanup.policy", None),
    "compression.type": ("string", "compression.type", None),
    "delete.retention.ms": ("long", "log.cleaner.delete.retention.ms", None),
    "file.delete.delay.ms": ("long", None, 60000),
    "flush.messages": ("long", "log.flush.interval.messages", None),
    "flush.ms": ("long", "log.flush.interval.ms", None),
    "index.interval.bytes": ("int", "log.index.interval.bytes", None),
    "max.message.bytes": ("int", "message.max.bytes", None),
    "message.timestamp.type": ("string", "log.message.timestamp.type", None),
    "message.timestamp.difference.max.ms": (
        "long", "log.message.timestamp.difference.max.ms", None),
    "message.timestamp.before.max.ms": ("long", "log.message.timestamp.before.max.ms", None),
    "message.timestamp.after.max.ms": ("long", "log.message.timestamp.after.max.ms", None),
    "min.insync.replicas": ("int", "min.insync.replicas", None),
    "preallocate": ("bool", None, False),
    "retention.bytes": ("long", "log.retention.bytes", None),
    "retention.ms": ("long", "log.retention.ms", None),
    "segment.bytes": ("int", "log.segment.bytes", None),
    "segment.ms": ("long", "log.roll.ms", None),
    "segment.index.bytes": ("int", "log.index.size.max.bytes", None),
    "segment.jitter.ms": ("long", None, 0),
    "unclean.leader.election.enable": ("bool", "unclean.leader.election.enable", None),
    "message.downconversion.enable": ("bool", None, True),
    "min.compaction.lag.ms": ("long", "log.cleaner.min.compaction.lag.ms", None),
    "max.compaction.lag.ms": ("long", "log.cleaner.max.compaction.lag.ms", None),
    "min.cleanable.dirty.ratio": ("double", "log.cleaner.min.cleanable.ratio", None),
}


class ConfigError(ValueError):
    """A setting that is unknown where it must be known, or a value of the wrong type."""


def normalize_name(name: str) -> str:
    """'log_segment_bytes' -> 'log.segment.bytes' (Kafka's names never contain '_', but
    listener names in `listener.name.<listener>.` prefixes may: sasl_ssl)."""
    name = name.strip()
    if name.startswith("listener.name."):
        listener, sep, rest = name[len("listener.name."):].partition(".")
        return f"listener.name.{listener.lower()}{sep}{rest}"
    return name.replace("_", ".")


def parse_value(name: str, type_: str, raw: Any) -> Any:
    """Turn a string (or already typed value) into the setting's type."""
    if raw is None or not isinstance(raw, str):
        if type_ == "bool" and isinstance(raw, int) and not isinstance(raw, bool):
            raise ConfigError(f"{name} must be true or false, got {raw!r}")
        return raw
    s = raw.strip()
    try:
        if type_ in ("int", "long"):
            v = int(s)
            if type_ == "int" and not -(1 << 31) <= v <= INT_MAX:
                raise ConfigError(f"{name}={s} does not fit in a 32-bit int")
            return v
        if type_ == "double":
            return float(s)
        if type_ == "bool":
            if s.lower() in ("true", "false"):
                return s.lower() == "true"
            raise ConfigError(f"{name} must be true or false, got {s!r}")
    except ValueError as e:
        if isinstance(e, ConfigError):
            raise
        article = "an" if str(type_)[:1] in "aeiou" else "a"
        raise ConfigError(f"{name} expects {article} {type_}, got {s!r}") from None
    return s


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties: `key=value`, `key: value` or `key value`; '#' and '!' comments;
    a trailing backslash continues the line; \\t, \\n, \\uXXXX escapes."""
    out: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        cur = pending + stripped
        backslashes = len(cur) - len(cur.rstrip("\\"))
        if backslashes % 2 == 1:
            pending = cur[:-1]
            continue
        pending = ""
        logical.append(cur)
    if pending:
        logical.append(pending)
    for entry in logical:
        key, i, n = [], 0, len(entry)
        while i < n:
            c = entry[i]
            if c == "\\" and i + 1 < n:
                key.append(entry[i:i + 2])
                i += 2
                continue
            if c in "=: \t\f":
                break
            key.append(c)
            i += 1
        while i < n and entry[i] in " \t\f":
            i += 1
        if i < n and entry[i] in "=:":
            i += 1
            while i < n and entry[i] in " \t\f":
                i += 1
        out[_unescape("".join(key))] = _unescape(entry[i:])
    return out


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "u" and i + 6 <= len(s):
                try:
                    out.append(chr(int(s[i + 2:i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class BrokerConfig:
    """Resolved broker settings. `cfg["log.segment.bytes"]` or `cfg.get(...)`."""

    def __init__(self, overrides: dict[str, Any] | None = None):
        self.values: dict[str, Any] = {}
        self.explicit: set[str] = set()
        self.unknown: dict[str, str] = {}
        for name, value in (overrides or {}).items():
            self.set(name, value)

    @classmethod
    def load(cls, config_file: str | None = None, sets: list[str] | tuple = (),
             **options: Any) -> "BrokerConfig":
        cfg = cls()
        if config_file:
            with open(config_file, encoding="utf-8") as f:
                for k, v in parse_properties(f.read()).items():
                    cfg.set(k, v)
        for item in sets:
            if "=" not in item:
                raise ConfigError(f"--set expects key=value, got {item!r}")
            k, v = item.split("=", 1)
            cfg.set(k, v)
        for k, v in options.items():
            if v is not None:
                cfg.set(k, v)
        for k in cfg.unknown:
            close = difflib.get_close_matches(k, BROKER_SETTINGS, n=3, cutoff=0.8)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            log.warning("config %s is not a known broker setting; it is kept but unused%s",
                        k, hint)
        return cfg

    def set(self, name: str, value: Any) -> None:
        name = normalize_name(name)
        s = BROKER_SETTINGS.get(name)
        if s is None:
            spec = listener_setting(name)      # listener.name.<l>.ssl.keystore.location etc.
            s = Setting(*spec) if spec is not None else None
        if s is None:
            self.unknown[name] = value
            return
        self.values[name] = parse_value(name, s.type, value)
        self.explicit.add(name)

    def get(self, name: str, default: Any = None) -> Any:
        name = normalize_name(name)
        if name in self.values:
            return self.values[name]
        s = BROKER_SETTINGS.get(name)
        if s is not None:
            return s.default
        return self.unknown.get(name, default)

    __getitem__ = get

    def is_default(self, name: str) -> bool:
        return normalize_name(name) not in self.explicit

    # -- derived values --------------------------------------------------------------------

    @property
    def broker_id(self) -> int:
        node = self.get("node.id")
        return int(node) if node is not None and self.is_default("broker.id") else \
            int(self.get("broker.id"))

    @property
    def data_dir(self) -> str:
        dirs = self.get("log.dirs")
        if dirs:
            parts = [d.strip() for d in str(dirs).split(",") if d.strip()]
            if len(parts) > 1:
                raise ConfigError("gregor supports one data directory; log.dirs lists "
                                  f"{len(parts)}: {dirs}")
            return parts[0]
        return self.get("log.dir")

    def retention_ms(self) -> int:
        if self.get("log.retention.ms") is not None:
            return int(self.get("log.retention.ms"))
        if self.get("log.retention.minutes") is not None:
            return int(self.get("log.retention.minutes")) * 60_000
        return int(self.get("log.retention.hours")) * 3_600_000

    def roll_ms(self) -> int:
        if self.get("log.roll.ms") is not None:
            return int(self.get("log.roll.ms"))
        return int(self.get("log.roll.hours")) * 3_600_000

    def broker_value_for_topic(self, topic_key: str) -> Any:
        """The broker-level value a topic setting falls back to."""
        type_, synonym, default = TOPIC_SETTINGS[topic_key]
        if topic_key == "retention.ms":
            return self.retention_ms()
        if topic_key == "segment.ms":
            return self.roll_ms()
        if topic_key == "flush.ms":
            v = self.get("log.flush.interval.ms")
            return LONG_MAX if v is None else v
        if synonym is None:
            return default
        return self.get(synonym)

    def topic_defaults(self) -> dict[str, Any]:
        return {k: self.broker_value_for_topic(k) for k in TOPIC_SETTINGS}


def checked_topic_configs(configs: dict[str, str | None]) -> dict[str, str]:
    """A request's topic configs, null values dropped and every entry validated; a bad one
    raises InvalidConfigurationError (Kafka's INVALID_CONFIG) naming it."""
    from ..protocol.errors import InvalidConfigurationError
    clean = {k: str(v) for k, v in configs.items() if v is not None}
    try:
        validate_topic_configs(clean)
    except ConfigError as e:
        raise InvalidConfigurationError(str(e)) from None
    return clean


def validate_topic_configs(configs: dict[str, str | None]) -> dict[str, Any]:
    """Typed topic configs; raises ConfigError naming the bad entry."""
    out: dict[str, Any] = {}
    for k, v in configs.items():
        if k not in TOPIC_SETTINGS:
            raise ConfigError(f"unknown topic config {k!r}")
        if v is None:
            continue
        type_ = TOPIC_SETTINGS[k][0]
        val = parse_value(k, type_, v)
        if k == "message.timestamp.type" and val not in ("CreateTime", "LogAppendTime"):
            raise ConfigError("message.timestamp.type must be CreateTime or LogAppendTime")
        if k == "cleanup.policy" and any(p.strip() not in ("delete", "compact")
                                         for p in str(val).split(",")):
            raise ConfigError("cleanup.policy must be delete and/or compact")
        if k == "min.cleanable.dirty.ratio" and not 0.0 <= val <= 1.0:
            raise ConfigError("min.cleanable.dirty.ratio must be between 0 and 1")
        if k in ("delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms") \
                and val < 0:
            raise ConfigError(f"{k} must be at least 0, got {val}")
        if k in ("min.insync.replicas", "max.message.bytes", "segment.bytes") and val < 1:
            raise ConfigError(f"{k} must be at least 1, got {val}")
        out[k] = val
    return out


def config_to_string(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
