"""The hash functions behind the keyed partitioners, bit-exact with the clients they come from:
Kafka's murmur2 (Java client, librdkafka, kafka-go), FNV-1a 32 (sarama, librdkafka, kafka-go)
and CRC-32 (librdkafka's consistent, sarama's consistent CRC, kafka-go's CRC32Balancer)."""
from __future__ import annotations

import struct
import zlib

_M32 = 0xFFFFFFFF
_MURMUR_M = 0x5BD1E995
_MURMUR_SEED = 0x9747B28C
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_U32LE = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (32-bit, seed 0x9747b28c) as a signed 32-bit int, like the Java client's
    Utils.murmur2."""
    data = bytes(data)
    length = len(data)
    m = _MURMUR_M
    h = (_MURMUR_SEED ^ length) & _M32
    n4 = length & ~3
    for (k,) in _U32LE.iter_unpack(data[:n4]):
        k = (k * m) & _M32
        k ^= k >> 24
        k = (k * m) & _M32
        h = ((h * m) & _M32) ^ k
    rem = length & 3
    if rem == 3:
        h ^= data[n4 + 2] << 16
    if rem >= 2:
        h ^= data[n4 + 1] << 8
    if rem >= 1:
        h ^= data[n4]
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java's Utils.toPositive: clear the sign bit (not abs(), which differs for MIN_VALUE)."""
    return n & 0x7FFFFFFF


def fnv1a_32(data: bytes) -> int:
    """32-bit FNV-1a as an unsigned int (Go's hash/fnv New32a, librdkafka's rd_fnv1a)."""
    h = _FNV_OFFSET
    for b in bytes(data):
        h = ((h ^ b) * _FNV_PRIME) & _M32
    return h


def crc32(data: bytes) -> int:
    """CRC-32 (IEEE, the zlib polynomial) as an unsigned int: librdkafka's rd_crc32 and Go's
    crc32.ChecksumIEEE."""
    return zlib.crc32(data)


def _int32(u: int) -> int:
    return u - 0x100000000 if u & 0x80000000 else u
