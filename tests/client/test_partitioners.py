"""Partitioners: published hash vectors, cross-checks against installed originals, behaviour."""
from __future__ import annotations

import random
import zlib
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from gregor.client.producer import partitioners as P
from gregor.client.producer.partitioners import (
    BuiltInPartitioner, CRC32Balancer, LeastBytesBalancer, LibrdkafkaPartitioner,
    Murmur2Balancer, Partitioner, crc32, fnv1a_32, get_partitioner, murmur2,
    partitioner_from_config,
)

# -- hash vectors --------------------------------------------------------------------------------

# Kafka's own murmur2 test vectors (the Java client's Utils test).
MURMUR2_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}

# FNV-1a 32-bit published vectors (the FNV reference test suite) and Go's hash/fnv.
FNV1A_VECTORS = {
    b"": 0x811C9DC5,
    b"a": 0xE40C292C,
    b"foobar": 0xBF9CF968,
    b"kafka": 0x0D33C4E1,
}


@pytest.mark.parametrize("data,expected", sorted(MURMUR2_VECTORS.items()))
def test_murmur2_matches_kafka_vectors(data, expected):
    assert murmur2(data) == expected


@pytest.mark.parametrize("data,expected", sorted(FNV1A_VECTORS.items()))
def test_fnv1a_matches_published_vectors(data, expected):
    assert fnv1a_32(data) == expected


def test_crc32_check_value():
    assert crc32(b"123456789") == 0xCBF43926  # the CRC-32/IEEE "check" value


def test_hashes_accept_bytearray_and_memoryview():
    for data in (bytearray(b"foobar"), memoryview(b"foobar")):
        assert murmur2(data) == MURMUR2_VECTORS[b"foobar"]
        assert fnv1a_32(data) == FNV1A_VECTORS[b"foobar"]


# -- cross-checks against installed implementations ------------------------------------------------

cimpl = pytest.importorskip("confluent_kafka.cimpl", reason="confluent-kafka not installed")

keys = st.binary(min_size=0, max_size=64)
counts = st.integers(min_value=1, max_value=2**31 - 1)


@settings(max_examples=300, deadline=None)
@given(keys, counts)
def test_librdkafka_hash_partitioners_match_confluent_kafka(key, n):
    # confluent_kafka exposes librdkafka's own partition functions for keyed records.
    assert get_partitioner("murmur2")("t", key, None, n, None) == cimpl.murmur2(key, n)
    assert get_partitioner("murmur2_random")("t", key, None, n, None) == cimpl.murmur2(key, n)
    assert get_partitioner("consistent")("t", key, None, n, None) == cimpl.consistent(key, n)
    assert get_partitioner("fnv1a")("t", key, None, n, None) == cimpl.fnv1a(key, n)
    assert get_partitioner("fnv1a_random")("t", key, None, n, None) == cimpl.fnv1a(key, n)
    if key:
        assert get_partitioner("consistent_random")("t", key, None, n, None) == \
            cimpl.consistent(key, n)


@settings(max_examples=200, deadline=None)
@given(keys)
def test_murmur2_matches_kafka_python(key):
    default = pytest.importorskip("kafka.partitioner.default")
    assert murmur2(key) & 0xFFFFFFFF == default.murmur2(key) & 0xFFFFFFFF


@settings(max_examples=200, deadline=None)
@given(keys, st.integers(min_value=1, max_value=1000))
def test_java_default_keyed_matches_kafka_python(key, n):
    default = pytest.importorskip("kafka.partitioner.default")

    class Cluster:
        def topics(self):
            return {"t"}

        def partitions_for_topic(self, topic):
            return set(range(n))

        available_partitions_for_topic = partitions_for_topic

    expected = default.DefaultPartitioner().partition("t", key, key, None, None, Cluster())
    assert get_partitioner("default")("t", key, None, n, list(range(n))) == expected


# -- sarama / kafka-go mappings of the same hashes ------------------------------------------------

def _int32(u):
    return u - (1 << 32) if u & 0x80000000 else u


def _go_sarama(h, n):
    # Go: int32(h) % n takes the sign of the dividend; sarama then negates negatives.
    r = abs(_int32(h)) % n
    return r


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.integers(min_value=1, max_value=500))
def test_sarama_hash_family(key, n):
    h = fnv1a_32(key)
    assert get_partitioner("sarama.hash")("t", key, None, n, None) == _go_sarama(h, n)
    assert get_partitioner("sarama.reference_hash")("t", key, None, n, None) == \
        (h & 0x7FFFFFFF) % n
    assert get_partitioner("sarama.consistent_crc")("t", key, None, n, None) == \
        zlib.crc32(key) % n
    # sarama's consistent CRC partitioner exists to agree with librdkafka's consistent.
    assert get_partitioner("sarama.consistent_crc")("t", key, None, n, None) == \
        cimpl.consistent(key, n)
    # librdkafka's fnv1a agrees with sarama's default hash partitioner.
    assert get_partitioner("sarama.hash")("t", key, None, n, None) == cimpl.fnv1a(key, n)


def test_sarama_hash_negative_handling_differs_from_reference():
    # Find a key whose int32 FNV-1a hash is negative: the two sign rules then differ (n=7).
    key = next(k for k in (str(i).encode() for i in range(1000))
               if _int32(fnv1a_32(k)) < 0 and (abs(_int32(fnv1a_32(k))) % 7)
               != (fnv1a_32(k) & 0x7FFFFFFF) % 7)
    assert get_partitioner("sarama.hash")("t", key, None, 7) != \
        get_partitioner("sarama.reference_hash")("t", key, None, 7)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.integers(min_value=1, max_value=500))
def test_kafka_go_balancers_match_librdkafka(key, n):
    assert CRC32Balancer()("t", key, None, n) == cimpl.consistent(key, n)
    assert Murmur2Balancer()("t", key, None, n) == cimpl.murmur2(key, n)
    assert get_partitioner("kafka-go.hash")("t", key, None, n) == cimpl.fnv1a(key, n)


# -- null and empty keys ---------------------------------------------------------------------------

def test_librdkafka_null_and_empty_key_rules():
    n = 16
    # The hash-only partitioners map a null key like an empty key.
    assert get_partitioner("consistent")("t", None, None, n) == cimpl.consistent(b"", n) == 0
    assert get_partitioner("murmur2")("t", None, None, n) == cimpl.murmur2(b"", n)
    assert get_partitioner("fnv1a")("t", None, None, n) == cimpl.fnv1a(b"", n)
    # murmur2_random / fnv1a_random hash an empty key but randomise a null one.
    assert get_partitioner("murmur2_random")("t", b"", None, n) == cimpl.murmur2(b"", n)
    assert get_partitioner("fnv1a_random")("t", b"", None, n) == cimpl.fnv1a(b"", n)
    spread = {LibrdkafkaPartitioner("murmur2_random", 0, random.Random(i))("t", None, None, n)
              for i in range(64)}
    assert len(spread) > 4
    # consistent_random randomises empty keys too.
    spread = {LibrdkafkaPartitioner("consistent_random", 0, random.Random(i))("t", b"", None, n)
              for i in range(64)}
    assert len(spread) > 4


def test_librdkafka_random_keys_stick_for_the_linger_window():
    now = [0.0]
    p = LibrdkafkaPartitioner("consistent_random", sticky_linger_ms=10, rng=random.Random(1),
                              clock=lambda: now[0])
    first = {p("t", None, None, 64) for _ in range(50)}
    assert len(first) == 1
    seen = set(first)
    for step in range(1, 40):
        now[0] = step * 0.011
        seen.add(p("t", None, None, 64))
    assert len(seen) > 5  # a new draw each window
    # keyed records are unaffected by stickiness
    assert p("t", b"k", None, 64) == cimpl.consistent(b"k", 64)


def test_random_partitioners_only_pick_available_partitions():
    for name in ("random", "consistent_random", "sarama.random"):
        p = get_partitioner(name, sticky_linger_ms=0, rng=random.Random(3))
        picks = {p("t", None, None, 10, [2, 5]) for _ in range(100)}
        assert picks == {2, 5}, name


# -- Java's built-in partitioner (KIP-794) ----------------------------------------------------------

def test_builtin_keyed_uses_murmur2_over_all_partitions():
    p = BuiltInPartitioner()
    # A key maps by hash even when its partition is not in the available list (Java keeps
    # keyed records on their partition).
    expected = (murmur2(b"foobar") & 0x7FFFFFFF) % 10
    assert p("t", b"foobar", b"v", 10, [q for q in range(10) if q != expected]) == expected


def test_builtin_null_key_sticks_until_batch_size_then_switches():
    p = BuiltInPartitioner(batch_size=100, rng=random.Random(7))
    first = p("t", None, b"x", 8, list(range(8)))
    for _ in range(5):
        assert p("t", None, b"x", 8, list(range(8))) == first
        p.on_append("t", first, 10, enable_switch=True)  # 60 bytes < batch.size
    p.on_append("t", first, 50, enable_switch=False)      # 110: past batch.size, mid-batch
    assert p("t", None, b"x", 8, list(range(8))) == first
    p.on_append("t", first, 0, enable_switch=True)        # batch boundary: switch now
    switches = 0
    cur = first
    for _ in range(40):
        nxt = p("t", None, b"x", 8, list(range(8)))
        switches += nxt != cur
        p.on_append("t", nxt, 250, enable_switch=False)   # past 2x batch.size: forced switch
        cur = nxt
    assert switches > 20


def test_builtin_on_append_for_other_partition_is_ignored():
    p = BuiltInPartitioner(batch_size=10, rng=random.Random(1))
    cur = p("t", None, None, 4)
    p.on_append("t", (cur + 1) % 4, 1000)
    assert p._sticky["t"].partition == cur and p._sticky["t"].produced_bytes == 0


def test_builtin_adaptive_weights_favour_short_queues():
    p = BuiltInPartitioner(batch_size=1, rng=random.Random(11))
    # partition 0 has 9 queued batches, partition 1 none: weights 1 and 10.
    p.update_load_stats("t", [9, 0], [0, 1], num_partitions=2)
    picks = Counter()
    for _ in range(2000):
        q = p("t", None, b"v", 2, [0, 1])
        picks[q] += 1
        p.on_append("t", q, 5)  # >= batch.size: switch for the next record
    assert picks[1] > 5 * picks[0] > 0


def test_builtin_adaptive_excludes_unlisted_partitions_and_resets_when_even():
    p = BuiltInPartitioner(batch_size=1, rng=random.Random(5))
    p.update_load_stats("t", [0, 0], [1, 3], num_partitions=4)  # 0 and 2 are not ready
    assert p._load["t"] == ([1, 2], [1, 3])
    picks = set()
    for _ in range(200):
        q = p("t", None, None, 4)
        picks.add(q)
        p.on_append("t", q, 1)
    assert picks == {1, 3}
    p.update_load_stats("t", [2, 2, 2, 2], [0, 1, 2, 3], num_partitions=4)
    assert "t" not in p._load  # all equal and all usable: uniform again


def test_builtin_adaptive_disabled_ignores_stats():
    p = BuiltInPartitioner(adaptive=False)
    p.update_load_stats("t", [5, 0], [0, 1], num_partitions=2)
    assert "t" not in p._load


def test_builtin_ignore_keys_treats_keyed_records_as_sticky():
    p = BuiltInPartitioner(ignore_keys=True, rng=random.Random(2))
    picks = {p("t", str(i).encode(), None, 32) for i in range(50)}
    assert len(picks) == 1


def test_legacy_sticky_switches_on_new_batch_to_a_different_partition():
    p = get_partitioner("uniform_sticky", rng=random.Random(4))
    cur = p("t", b"key-is-ignored", None, 5)
    assert all(p("t", str(i).encode(), None, 5) == cur for i in range(10))
    p.on_new_batch("t", cur)
    nxt = p("t", None, None, 5)
    assert nxt != cur
    p.on_new_batch("t", cur)  # stale event: no change
    assert p("t", None, None, 5) == nxt
    legacy = get_partitioner("org.apache.kafka.clients.producer.internals.DefaultPartitioner")
    assert legacy("t", b"foobar", None, 10) == (murmur2(b"foobar") & 0x7FFFFFFF) % 10


# -- round robin ---------------------------------------------------------------------------------

def test_java_round_robin_cycles_available_partitions_per_topic():
    p = get_partitioner("org.apache.kafka.clients.producer.RoundRobinPartitioner")
    assert [p("a", b"k", None, 6, [1, 3, 5]) for _ in range(6)] == [1, 3, 5, 1, 3, 5]
    assert [p("b", None, None, 3, []) for _ in range(4)] == [0, 1, 2, 0]


def test_sarama_round_robin_wraps_and_kafka_go_counts():
    s = get_partitioner("sarama.round_robin")
    assert [s("t", None, None, 3) for _ in range(5)] == [0, 1, 2, 0, 1]
    assert s("t", None, None, 2) == 0  # index 2 is past the new count: wraps to 0
    g = get_partitioner("kafka-go.round_robin")
    assert [g("t", None, None, 4) for _ in range(6)] == [0, 1, 2, 3, 0, 1]


def test_least_bytes_picks_the_emptiest_partition():
    p = LeastBytesBalancer()
    assert p("t", b"kk", b"12345678", 3) == 0     # all zero: lowest id; 0 now has 10 bytes
    assert p("t", None, b"1", 3) == 1             # 1 byte on partition 1
    assert p("t", None, b"123", 3) == 2           # 3 bytes on partition 2
    assert p("t", None, b"1", 3) == 1             # 1 < 3 < 10
    assert p("t", None, b"1", 4) == 0             # partition count changed: counters restart


def test_kafka_go_empty_key_rules():
    assert CRC32Balancer(consistent=True)("t", b"", None, 9) == 0
    assert CRC32Balancer(consistent=True)("t", None, None, 9) == 0
    assert Murmur2Balancer(consistent=True)("t", None, None, 9) == cimpl.murmur2(b"", 9)
    # not consistent: empty key hashes with murmur2 but randomises with crc32
    assert Murmur2Balancer()("t", b"", None, 9) == cimpl.murmur2(b"", 9)
    spread = {CRC32Balancer(rng=random.Random(i))("t", b"", None, 9) for i in range(40)}
    assert len(spread) > 3


def test_manual_partitioner_demands_an_explicit_partition():
    with pytest.raises(ValueError, match="partition="):
        get_partitioner("sarama.manual")("t", b"k", None, 3)


# -- lookup and callables --------------------------------------------------------------------------

def test_names_are_case_and_dash_insensitive():
    assert isinstance(get_partitioner("Murmur2_Random"), LibrdkafkaPartitioner)
    assert isinstance(get_partitioner("kafka-go.least-bytes"), LeastBytesBalancer)
    assert isinstance(get_partitioner(None), BuiltInPartitioner)
    for name in P.NAMES:
        assert isinstance(get_partitioner(name), Partitioner)


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="murmur2_random"):
        get_partitioner("no_such_partitioner")


def test_callable_partitioner_is_checked():
    p = get_partitioner(lambda topic, key, value, n, available: len(key or b"") % n)
    assert p("t", b"abc", None, 2) == 1
    bad = get_partitioner(lambda *a: 7)
    with pytest.raises(ValueError, match="partitions 0..2"):
        bad("t", None, None, 3)
    worse = get_partitioner(lambda *a: "zero")
    with pytest.raises(ValueError, match="partition number"):
        worse("t", None, None, 3)


def test_callable_hooks_and_java_style_objects_are_forwarded():
    calls = []

    class Mine:
        sticky = True

        def partition(self, topic, key, value, n, available):
            return 0

        def on_new_batch(self, topic, prev):
            calls.append(prev)

    p = get_partitioner(Mine)
    assert p("t", None, None, 1) == 0
    p.on_new_batch("t", 0)
    assert calls == [0] and p.sticky


def test_dotted_path_and_config_selection():
    p = get_partitioner("gregor.client.producer.partitioners:LeastBytesBalancer")
    assert isinstance(p, LeastBytesBalancer)
    cfg = {"partitioner": "fnv1a_random", "linger.ms": 20}
    q = partitioner_from_config(cfg)
    assert q.name == "fnv1a_random" and q._linger_s == pytest.approx(0.040)
    # partitioner.class wins over partitioner
    q = partitioner_from_config({"partitioner": "murmur2",
                                 "partitioner.class": "kafka-go.least_bytes"})
    assert isinstance(q, LeastBytesBalancer)
    q = partitioner_from_config({"batch_size": 500, "partitioner_ignore_keys": "true"})
    assert isinstance(q, BuiltInPartitioner) and q.batch_size == 500 and q.ignore_keys
    with pytest.raises(ValueError, match="importing it failed"):
        get_partitioner("no.such.module.Partitioner")
