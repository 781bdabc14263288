"""Partitioners: which partition a record goes to, byte-compatible with the clients they mimic.

Every partitioner is a `Partitioner`: calling it as
`p(topic, key_bytes, value_bytes, num_partitions, available_partitions) -> int` picks a partition
(`available_partitions` is the sorted list of partition ids whose leader is known, possibly
empty, or None when unknown). Sticky partitioners also listen to the accumulator through three
hooks that are no-ops elsewhere: `on_append` (bytes appended to the partition the partitioner
chose), `on_new_batch` (the legacy sticky switch) and `update_load_stats` (per-partition queue
sizes for Java's adaptive partitioning). The interface is written down in docs/CONTRACTS.md.

Families (pick with `get_partitioner(name)`, or `partitioner_from_config(cfg)` which reads the
`partitioner.class` and `partitioner` keys):
- Java's producer: "default" (keys: murmur2; null keys: uniform sticky with adaptive weighting),
  "round_robin", and the legacy "uniform_sticky" / "legacy_default" (sticky switched on a new
  batch). Java class names are accepted too.
- librdkafka: "random", "consistent", "consistent_random", "murmur2", "murmur2_random", "fnv1a",
  "fnv1a_random"; null keys stick to one random partition for sticky.partitioning.linger.ms.
- sarama: "sarama.hash", "sarama.random", "sarama.round_robin", "sarama.manual",
  "sarama.reference_hash", "sarama.consistent_crc".
- kafka-go: "kafka-go.least_bytes", "kafka-go.crc32", "kafka-go.murmur2" (and "_consistent"
  variants), "kafka-go.round_robin", "kafka-go.hash".
- any callable with the signature above (or a class, or a "module:attr" path to one).
"""
from __future__ import annotations

import bisect
import importlib
import itertools
import random
import time
from typing import Any, Callable, Mapping, Sequence

from .hashing import _M32, _int32, crc32, fnv1a_32, murmur2, to_positive

# -- base class ---------------------------------------------------------------------------------

class Partitioner:
    """Base class. Subclasses implement `__call__`; the hooks are no-ops unless a partitioner
    keeps sticky state."""

    name = "partitioner"
    #: True when the accumulator should report appends / queue sizes to this partitioner.
    sticky = False

    def __call__(self, topic: str, key: bytes | None, value: bytes | None,
                 num_partitions: int, available_partitions: Sequence[int] | None = None) -> int:
        raise NotImplementedError

    def partition(self, topic, key, value, num_partitions, available_partitions=None) -> int:
        """Alias of calling the partitioner (reads like Java's Partitioner.partition)."""
        return self(topic, key, value, num_partitions, available_partitions)

    def on_append(self, topic: str, partition: int, appended_bytes: int,
                  enable_switch: bool = True) -> None:
        """The accumulator appended `appended_bytes` to `partition` for a record whose partition
        this partitioner chose. `enable_switch` is False while the partition's last batch still
        has room (Java switches sticky partitions only at batch boundaries, or at 2x batch.size)."""

    def on_new_batch(self, topic: str, prev_partition: int) -> None:
        """The accumulator is opening a new batch on `prev_partition` (legacy sticky switch)."""

    def update_load_stats(self, topic: str, queue_sizes: Sequence[int],
                          partition_ids: Sequence[int], num_partitions: int) -> None:
        """Queued batch counts for the partitions whose leaders can take data (Java's adaptive
        partitioning): the null-key partition is then drawn with weight max+1-queue_size."""

    def close(self) -> None:
        pass

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}>"


def _pick_random(rng: random.Random, num_partitions: int, available) -> int:
    if available:
        return available[rng.randrange(len(available))]
    return rng.randrange(num_partitions)


# -- Java ---------------------------------------------------------------------------------------

class _StickyInfo:
    __slots__ = ("partition", "produced_bytes")

    def __init__(self, partition: int):
        self.partition = partition
        self.produced_bytes = 0


class BuiltInPartitioner(Partitioner):
    """The Java producer's default since KIP-794: keys hash with murmur2 over all partitions; null
    keys (or every record with ignore_keys) stick to one partition until batch.size bytes went
    there, then switch to a random partition, weighted toward short queues when the accumulator
    reports queue sizes (adaptive partitioning)."""

    name = "default"
    sticky = True

    def __init__(self, batch_size: int = 16384, adaptive: bool = True, ignore_keys: bool = False,
                 rng: random.Random | None = None):
        self.batch_size = max(1, batch_size)
        self.adaptive = adaptive
        self.ignore_keys = ignore_keys
        self._rng = rng or random.Random()
        self._sticky: dict[str, _StickyInfo] = {}
        # topic -> (cumulative weights, partition ids); absent means "uniform".
        self._load: dict[str, tuple[list[int], list[int]]] = {}

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        if key is not None and not self.ignore_keys:
            return to_positive(murmur2(key)) % num_partitions
        info = self._sticky.get(topic)
        if info is None or info.partition >= num_partitions:
            info = _StickyInfo(self._next_partition(topic, num_partitions, available_partitions))
            self._sticky[topic] = info
        return info.partition

    def _next_partition(self, topic, num_partitions, available) -> int:
        load = self._load.get(topic)
        if load is None:
            return _pick_random(self._rng, num_partitions, available)
        cumulative, ids = load
        weighted = self._rng.randrange(cumulative[-1])
        # First slot whose cumulative weight exceeds the draw: a partition with weight w owns
        # w consecutive draws.
        return ids[bisect.bisect_right(cumulative, weighted)]

    def on_append(self, topic, partition, appended_bytes, enable_switch=True):
        info = self._sticky.get(topic)
        if info is None or info.partition != partition:
            return
        info.produced_bytes += appended_bytes
        # Switch at a batch boundary once batch.size went here; past 2x switch regardless, so a
        # partition whose batches never fill (tiny linger) does not keep the sticky forever.
        if (info.produced_bytes >= self.batch_size and enable_switch) or \
                info.produced_bytes >= 2 * self.batch_size:
            # The next record draws a new partition with the metadata it is sent under.
            self._sticky.pop(topic, None)

    def update_load_stats(self, topic, queue_sizes, partition_ids, num_partitions):
        if not self.adaptive or not queue_sizes:
            self._load.pop(topic, None)
            return
        max_plus_1 = max(queue_sizes) + 1
        if len(queue_sizes) == num_partitions and min(queue_sizes) == max_plus_1 - 1:
            # All partitions usable and equally loaded: plain uniform choice.
            self._load.pop(topic, None)
            return
        cumulative = list(itertools.accumulate(max_plus_1 - q for q in queue_sizes))
        self._load[topic] = (cumulative, list(partition_ids))


class _LegacySticky(Partitioner):
    """Java 2.4-3.2's sticky cache (KIP-480): a null-key record goes to the topic's sticky
    partition; `on_new_batch` on that partition moves it to a different random one."""

    sticky = True

    def __init__(self, rng: random.Random | None = None):
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}
        self._last_seen: dict[str, tuple[int, Sequence[int] | None]] = {}

    def _sticky_partition(self, topic, num_partitions, available) -> int:
        p = self._sticky.get(topic)
        self._last_seen[topic] = (num_partitions, available)
        if p is None or p >= num_partitions:
            p = self._next(topic, num_partitions, available, -1)
        return p

    def _next(self, topic, num_partitions, available, prev) -> int:
        choices = list(available) if available else list(range(num_partitions))
        if len(choices) > 1 and prev in choices:
            choices.remove(prev)
        p = choices[self._rng.randrange(len(choices))]
        self._sticky[topic] = p
        return p

    def on_new_batch(self, topic, prev_partition):
        if self._sticky.get(topic) == prev_partition:
            n, available = self._last_seen.get(topic, (prev_partition + 1, None))
            self._next(topic, n, available, prev_partition)


class UniformStickyPartitioner(_LegacySticky):
    """Java's UniformStickyPartitioner: ignores keys, every record goes to the sticky partition."""

    name = "uniform_sticky"

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        return self._sticky_partition(topic, num_partitions, available_partitions)


class LegacyDefaultPartitioner(_LegacySticky):
    """Java's DefaultPartitioner before KIP-794: murmur2 for keys, legacy sticky for null keys."""

    name = "legacy_default"

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        if key is not None:
            return to_positive(murmur2(key)) % num_partitions
        return self._sticky_partition(topic, num_partitions, available_partitions)


class JavaRoundRobinPartitioner(Partitioner):
    """Java's RoundRobinPartitioner: a per-topic counter over the available partitions (all of
    them when none is known to be available); keys are ignored."""

    name = "round_robin"

    def __init__(self):
        self._counters: dict[str, Any] = {}

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._counters.setdefault(topic, itertools.count())
        n = next(counter) & 0x7FFFFFFF  # Java's toPositive of an int counter that may wrap
        if available_partitions:
            return available_partitions[n % len(available_partitions)]
        return n % num_partitions


# -- librdkafka ---------------------------------------------------------------------------------

def _rdk_consistent(key, n):
    return crc32(key or b"") % n


def _rdk_murmur2(key, n):
    return to_positive(murmur2(key or b"")) % n


def _rdk_fnv1a(key, n):
    # librdkafka maps FNV-1a like sarama's hash partitioner (signed remainder, then its absolute
    # value), so the two clients agree on keyed partitions.
    return _sarama_mod(fnv1a_32(key or b""), n)


def _sarama_mod(h: int, n: int) -> int:
    """sarama's int32(hash) % n, negated when negative (Go's remainder takes the dividend's
    sign, so this equals |int32(hash)| % n)."""
    return abs(_int32(h)) % n


class LibrdkafkaPartitioner(Partitioner):
    """librdkafka's `partitioner` setting. The hash ones map a null key like an empty key; the
    `_random` ones send null keys (consistent_random: also empty keys) to a random available
    partition. Like librdkafka, records sent to a random partition stick to it for
    sticky.partitioning.linger.ms (0 disables)."""

    sticky = False
    _KINDS = {
        # name: (hash function or None for random, random for None keys, random for b"" keys)
        "random": (None, True, True),
        "consistent": (_rdk_consistent, False, False),
        "consistent_random": (_rdk_consistent, True, True),
        "murmur2": (_rdk_murmur2, False, False),
        "murmur2_random": (_rdk_murmur2, True, False),
        "fnv1a": (_rdk_fnv1a, False, False),
        "fnv1a_random": (_rdk_fnv1a, True, False),
    }

    def __init__(self, kind: str = "consistent_random", sticky_linger_ms: float = 10.0,
                 rng: random.Random | None = None, clock: Callable[[], float] = time.monotonic):
        if kind not in self._KINDS:
            raise ValueError(f"unknown librdkafka partitioner {kind!r}; "
                             f"choose one of {', '.join(self._KINDS)}")
        self.name = kind
        self._hash, self._null_random, self._empty_random = self._KINDS[kind]
        self._linger_s = max(0.0, sticky_linger_ms) / 1000.0
        self._rng = rng or random.Random()
        self._clock = clock
        self._sticky: dict[str, tuple[int, float]] = {}

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        if key is None:
            randomised = self._null_random
        elif not key:
            randomised = self._empty_random
        else:
            randomised = self._hash is None
        if not randomised:
            return self._hash(key, num_partitions)
        if self._linger_s <= 0:
            return _pick_random(self._rng, num_partitions, available_partitions)
        now = self._clock()
        held = self._sticky.get(topic)
        if held is not None:
            p, since = held
            if now - since < self._linger_s and p < num_partitions and (
                    not available_partitions or p in available_partitions):
                return p
        p = _pick_random(self._rng, num_partitions, available_partitions)
        self._sticky[topic] = (p, now)
        return p


# -- sarama -------------------------------------------------------------------------------------

class SaramaHashPartitioner(Partitioner):
    """sarama's hash partitioners: nil keys go to a random partition; others hash with FNV-1a
    (or CRC-32). `mode` is how the 32-bit hash becomes a partition: "sarama" (signed int32 %
    n, then negated when negative: sarama's NewHashPartitioner), "reference" (sign bit
    cleared, like Java: NewReferenceHashPartitioner) or "unsigned" (uint32 % n:
    NewConsistentCRCHashPartitioner, librdkafka's consistent)."""

    def __init__(self, mode: str = "sarama", hasher: Callable[[bytes], int] = fnv1a_32,
                 name: str = "sarama.hash", rng: random.Random | None = None):
        if mode not in ("sarama", "reference", "unsigned"):
            raise ValueError(f"unknown hash mode {mode!r}")
        self.mode = mode
        self.hasher = hasher
        self.name = name
        self._rng = rng or random.Random()

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        if key is None:
            return self._rng.randrange(num_partitions)
        h = self.hasher(key)
        if self.mode == "unsigned":
            return h % num_partitions
        h = _int32(h)
        if self.mode == "reference":
            return (h & 0x7FFFFFFF) % num_partitions
        return abs(h) % num_partitions  # == -(h % n) in Go when h < 0


class SaramaRandomPartitioner(Partitioner):
    """sarama's NewRandomPartitioner: uniform over the writable partitions."""

    name = "sarama.random"

    def __init__(self, rng: random.Random | None = None):
        self._rng = rng or random.Random()

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        return _pick_random(self._rng, num_partitions, available_partitions)


class SaramaRoundRobinPartitioner(Partitioner):
    """sarama's NewRoundRobinPartitioner: a per-topic index over the writable partitions that
    wraps to 0 when it reaches their count."""

    name = "sarama.round_robin"

    def __init__(self):
        self._next: dict[str, int] = {}

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        choices = available_partitions or None
        n = len(choices) if choices else num_partitions
        i = self._next.get(topic, 0)
        if i >= n:
            i = 0
        self._next[topic] = i + 1
        return choices[i] if choices else i


class ManualPartitioner(Partitioner):
    """sarama's NewManualPartitioner: the caller picks the partition for every record."""

    name = "sarama.manual"

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        raise ValueError("the manual partitioner needs an explicit partition: "
                         "pass partition=N to send()")


# -- kafka-go -----------------------------------------------------------------------------------

class RoundRobinBalancer(Partitioner):
    """kafka-go's RoundRobin: a counter over the topic's partitions."""

    name = "kafka-go.round_robin"

    def __init__(self):
        self._counters: dict[str, Any] = {}

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._counters.setdefault(topic, itertools.count())
        return (next(counter) & _M32) % num_partitions


class LeastBytesBalancer(Partitioner):
    """kafka-go's LeastBytes: the partition that has received the fewest key+value bytes from
    this balancer (the lowest id on ties)."""

    name = "kafka-go.least_bytes"

    def __init__(self):
        self._bytes: dict[str, list[int]] = {}

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        counts = self._bytes.get(topic)
        if counts is None or len(counts) != num_partitions:
            counts = self._bytes[topic] = [0] * num_partitions  # partition set changed: restart
        p = counts.index(min(counts))
        counts[p] += len(key or b"") + len(value or b"")
        return p


class CRC32Balancer(Partitioner):
    """kafka-go's CRC32Balancer (librdkafka's consistent_random; consistent=True gives
    librdkafka's consistent): nil and empty keys are both treated as unset."""

    def __init__(self, consistent: bool = False, rng: random.Random | None = None):
        self.consistent = consistent
        self.name = "kafka-go.crc32" + ("_consistent" if consistent else "")
        self._rng = rng or random.Random()

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        if not key and not self.consistent:
            return self._rng.randrange(num_partitions)
        return crc32(key or b"") % num_partitions


class Murmur2Balancer(Partitioner):
    """kafka-go's Murmur2Balancer (Java / librdkafka murmur2_random; consistent=True gives
    librdkafka's murmur2): a nil key is unset, an empty key is hashed."""

    def __init__(self, consistent: bool = False, rng: random.Random | None = None):
        self.consistent = consistent
        self.name = "kafka-go.murmur2" + ("_consistent" if consistent else "")
        self._rng = rng or random.Random()

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        if key is None and not self.consistent:
            return self._rng.randrange(num_partitions)
        return to_positive(murmur2(key or b"")) % num_partitions


class HashBalancer(Partitioner):
    """kafka-go's Hash balancer: FNV-1a like sarama's hash; nil keys go round robin."""

    name = "kafka-go.hash"

    def __init__(self):
        self._rr = RoundRobinBalancer()
        self._hash = SaramaHashPartitioner("sarama")

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        if key is None:
            return self._rr(topic, key, value, num_partitions, available_partitions)
        return self._hash(topic, key, value, num_partitions, available_partitions)


# -- any callable -------------------------------------------------------------------------------

class CallablePartitioner(Partitioner):
    """Wraps a user callable `fn(topic, key, value, num_partitions, available) -> int`, checking
    what it returns. Hooks the callable object defines are forwarded."""

    def __init__(self, fn: Callable, owner: Any = None):
        self.fn = fn
        owner = fn if owner is None else owner
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__
        for hook in ("on_append", "on_new_batch", "update_load_stats", "close"):
            if callable(getattr(owner, hook, None)):
                setattr(self, hook, getattr(owner, hook))
        self.sticky = bool(getattr(owner, "sticky", False))

    def __call__(self, topic, key, value, num_partitions, available_partitions=None):
        p = self.fn(topic, key, value, num_partitions, available_partitions)
        if type(p) is not int:
            try:
                p = int(p)
            except (TypeError, ValueError):
                raise ValueError(f"partitioner {self.name} returned {p!r} for topic {topic!r}; "
                                 "it must return a partition number") from None
        if not 0 <= p < num_partitions:
            raise ValueError(f"partitioner {self.name} returned partition {p} for topic "
                             f"{topic!r}, which has partitions 0..{num_partitions - 1}")
        return p


# -- lookup -------------------------------------------------------------------------------------

def _factories() -> dict[str, Callable[[dict], Partitioner]]:
    rdk = {k: (lambda o, k=k: LibrdkafkaPartitioner(k, o["sticky_linger_ms"], o["rng"]))
           for k in LibrdkafkaPartitioner._KINDS}
    java_default = lambda o: BuiltInPartitioner(o["batch_size"], o["adaptive"],  # noqa: E731
                                                o["ignore_keys"], o["rng"])
    java_rr = lambda o: JavaRoundRobinPartitioner()  # noqa: E731
    uniform = lambda o: UniformStickyPartitioner(o["rng"])  # noqa: E731
    legacy = lambda o: LegacyDefaultPartitioner(o["rng"])  # noqa: E731
    return {
        **rdk,
        "default": java_default, "builtin": java_default, "java.default": java_default,
        "round_robin": java_rr, "roundrobin": java_rr, "java.round_robin": java_rr,
        "uniform_sticky": uniform, "java.uniform_sticky": uniform,
        "legacy_default": legacy, "java.legacy_default": legacy,
        "org.apache.kafka.clients.producer.roundrobinpartitioner": java_rr,
        "org.apache.kafka.clients.producer.uniformstickypartitioner": uniform,
        "org.apache.kafka.clients.producer.internals.defaultpartitioner": legacy,
        "sarama.hash": lambda o: SaramaHashPartitioner("sarama", fnv1a_32, "sarama.hash",
                                                       o["rng"]),
        "sarama.reference_hash": lambda o: SaramaHashPartitioner(
            "reference", fnv1a_32, "sarama.reference_hash", o["rng"]),
        "sarama.consistent_crc": lambda o: SaramaHashPartitioner(
            "unsigned", crc32, "sarama.consistent_crc", o["rng"]),
        "sarama.random": lambda o: SaramaRandomPartitioner(o["rng"]),
        "sarama.round_robin": lambda o: SaramaRoundRobinPartitioner(),
        "sarama.manual": lambda o: ManualPartitioner(), "manual": lambda o: ManualPartitioner(),
        "kafka_go.least_bytes": lambda o: LeastBytesBalancer(),
        "kafka_go.crc32": lambda o: CRC32Balancer(False, o["rng"]),
        "kafka_go.crc32_consistent": lambda o: CRC32Balancer(True, o["rng"]),
        "kafka_go.murmur2": lambda o: Murmur2Balancer(False, o["rng"]),
        "kafka_go.murmur2_consistent": lambda o: Murmur2Balancer(True, o["rng"]),
        "kafka_go.round_robin": lambda o: RoundRobinBalancer(),
        "kafka_go.hash": lambda o: HashBalancer(),
    }


_FACTORIES = _factories()
NAMES = sorted(_FACTORIES)


def _normalise(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace("kafkago.", "kafka_go.")


def get_partitioner(spec: str | Callable | Partitioner | type | None = None, *,
                    batch_size: int = 16384, adaptive: bool = True, ignore_keys: bool = False,
                    sticky_linger_ms: float = 10.0,
                    rng: random.Random | None = None) -> Partitioner:
    """A Partitioner from a name (see NAMES; None means Java's default), a Partitioner, a class
    to instantiate, a "module:attr" / dotted path to one, or any callable."""
    if spec is None:
        spec = "default"
    if isinstance(spec, Partitioner):
        return spec
    if isinstance(spec, str):
        key = _normalise(spec)
        factory = _FACTORIES.get(key)
        if factory is not None:
            return factory(dict(batch_size=batch_size, adaptive=adaptive,
                                ignore_keys=ignore_keys, sticky_linger_ms=sticky_linger_ms,
                                rng=rng))
        spec = _import_path(spec)
    if isinstance(spec, type):
        spec = spec()
        if isinstance(spec, Partitioner):
            return spec
    if callable(getattr(spec, "partition", None)):  # an object with Java's method name
        return CallablePartitioner(spec.partition, owner=spec)
    if callable(spec):
        return CallablePartitioner(spec)
    raise ValueError(f"partitioner {spec!r} is neither a known name nor callable; "
                     f"known names: {', '.join(NAMES)}")


def _import_path(path: str):
    mod, sep, attr = path.partition(":")
    if not sep:
        mod, _, attr = path.rpartition(".")
    if not mod:
        raise ValueError(f"unknown partitioner {path!r}; known names: {', '.join(NAMES)}")
    try:
        return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"unknown partitioner {path!r} (not a known name, and importing it "
                         f"failed: {e}); known names: {', '.join(NAMES)}") from None


def _conf(cfg: Mapping, name: str, default):
    for key in (name, name.replace(".", "_")):
        if key in cfg and cfg[key] is not None:
            return cfg[key]
    return default


def _as_bool(v) -> bool:
    return v.strip().lower() in ("true", "1", "yes") if isinstance(v, str) else bool(v)


def partitioner_from_config(cfg: Mapping, rng: random.Random | None = None) -> Partitioner:
    """The partitioner a producer config asks for: `partitioner.class` (a name, class, callable
    or dotted path) wins over `partitioner` (librdkafka's names); neither gives Java's default.
    Reads batch.size, partitioner.adaptive.partitioning.enable, partitioner.ignore.keys and
    sticky.partitioning.linger.ms (default 2 x linger.ms, as librdkafka)."""
    spec = _conf(cfg, "partitioner.class", None)
    if spec is None:
        spec = _conf(cfg, "partitioner", None)
    linger = float(_conf(cfg, "linger.ms", 5))
    return get_partitioner(
        spec,
        batch_size=int(_conf(cfg, "batch.size", 16384)),
        adaptive=_as_bool(_conf(cfg, "partitioner.adaptive.partitioning.enable", True)),
        ignore_keys=_as_bool(_conf(cfg, "partitioner.ignore.keys", False)),
        sticky_linger_ms=float(_conf(cfg, "sticky.partitioning.linger.ms", 2 * linger)),
        rng=rng)


__all__ = [
    "Partitioner", "get_partitioner", "partitioner_from_config", "NAMES",
    "murmur2", "to_positive", "fnv1a_32", "crc32",
    "BuiltInPartitioner", "JavaRoundRobinPartitioner", "UniformStickyPartitioner",
    "LegacyDefaultPartitioner", "LibrdkafkaPartitioner", "SaramaHashPartitioner",
    "SaramaRandomPartitioner", "SaramaRoundRobinPartitioner", "ManualPartitioner",
    "RoundRobinBalancer", "LeastBytesBalancer", "CRC32Balancer", "Murmur2Balancer",
    "HashBalancer", "CallablePartitioner",
]
