"""Raw Kafka frames built by hand (struct + crc32c), independent of gregor's own protocol code,
so the fault tests do not share a bug with the broker they test; and mutations of them.

A frame is a 4-byte big-endian size followed by the request: header v1 (api_key int16,
api_version int16, correlation_id int32, client_id nullable string) and the body. Only
non-flexible versions are built here, which every broker must accept.
"""
from __future__ import annotations

import gzip
import random
import socket
import struct
import time
import zlib

import crc32c


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def string(s: str | None) -> bytes:
    return i16(-1) if s is None else i16(len(s.encode())) + s.encode()
def array(items: list[bytes]) -> bytes:
    return i32(len(items)) + b"".join(items)
def varint(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)  # zigzag
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def frame(api_key: int, version: int, correlation_id: int, body: bytes,
          client_id: str | None = "gregor-fault-test") -> bytes:
    req = i16(api_key) + i16(version) + i32(correlation_id) + string(client_id) + body
    return i32(len(req)) + req


def records_section(values: list[bytes]) -> bytes:
    """The records of a magic-2 batch, keyless, offset and timestamp deltas = index."""
    out = b""
    for i, v in enumerate(values):
        body = (i8(0) + varint(i) + varint(i) + varint(-1) + varint(len(v)) + v + varint(0))
        out += varint(len(body)) + body
    return out


def compress(codec: int, data: bytes) -> bytes:
    """Kafka's codecs: 1 gzip, 2 snappy (raw block; brokers also take snappy-java framing),
    3 lz4 (frame format), 4 zstd (frame)."""
    if codec == 0:
        return data
    if codec == 1:
        return gzip.compress(data)
    if codec == 2:
        import cramjam
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == 3:
        import lz4.frame
        return lz4.frame.compress(data)
    if codec == 4:
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(codec)


def raw_batch(section: bytes, count: int, *, attributes: int = 0,
              base_ts: int = 1_700_000_000_000) -> bytes:
    """A magic-2 batch around an arbitrary (already compressed, if any) records section, with a
    correct CRC: whatever is wrong inside it gets past the CRC check."""
    after_crc = (i16(attributes) + i32(max(count, 1) - 1) + i64(base_ts)
                 + i64(base_ts + max(count, 1) - 1) + i64(-1) + i16(-1) + i32(-1) + i32(count)
                 + section)
    crc = crc32c.crc32c(after_crc)
    tail = i32(-1) + i8(2) + struct.pack(">I", crc) + after_crc  # leader epoch, magic, crc
    return i64(0) + i32(len(tail)) + tail


def record_batch(values: list[bytes], codec: int = 0,
                 base_ts: int = 1_700_000_000_000) -> bytes:
    """A well-formed magic-2 batch of keyless records, one ms apart."""
    return raw_batch(compress(codec, records_section(values)), len(values), attributes=codec,
                     base_ts=base_ts)


def crc_valid_hostile_batch(rnd: random.Random) -> bytes:
    """A batch whose CRC is right but whose inside is not: garbage records (compressed or not),
    garbage compressed bytes, or a record count that lies."""
    codec = rnd.randrange(5)
    values = [rnd.randbytes(rnd.randrange(0, 40)) for _ in range(rnd.randrange(1, 6))]
    section = bytearray(records_section(values))
    count = len(values)
    how = rnd.randrange(4)
    if how == 0 and section:  # corrupt the records, then compress
        for _ in range(rnd.randrange(1, 4)):
            section[rnd.randrange(len(section))] = rnd.randrange(256)
        packed = compress(codec, bytes(section))
    elif how == 1:  # absurd varints (lengths, counts) inside a record
        section[1:1] = rnd.choice([b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f",
                                   b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"])
        packed = compress(codec, bytes(section))
    elif how == 2:  # corrupt the compressed bytes (or, uncompressed, cut them short)
        packed = bytearray(compress(codec, bytes(section)))
        if codec and len(packed) > 4:
            for _ in range(rnd.randrange(1, 4)):
                packed[rnd.randrange(len(packed))] ^= 1 << rnd.randrange(8)
        else:
            del packed[rnd.randrange(len(packed)):]
        packed = bytes(packed)
    else:  # a record count that does not match
        packed = compress(codec, bytes(section))
        count = rnd.choice([0, count + 1, count + 1000, -1, 0x7FFFFFFF])
    return raw_batch(packed, count, attributes=codec | rnd.choice([0, 0, 0, 0x10, 0x20]))


def decompression_bomb(codec: int, size: int) -> bytes:
    """A batch whose records section decompresses to `size` zero bytes (never materialised
    here: compressed in 1 MiB steps)."""
    chunk = bytes(1 << 20)
    if codec == 1:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
        packed = b"".join(c.compress(chunk) for _ in range(size >> 20)) + c.flush()
    elif codec == 3:
        import lz4.frame
        c = lz4.frame.LZ4FrameCompressor()
        packed = c.begin() + b"".join(c.compress(chunk) for _ in range(size >> 20)) + c.flush()
    elif codec == 4:
        import zstandard
        c = zstandard.ZstdCompressor().compressobj()
        packed = b"".join(c.compress(chunk) for _ in range(size >> 20)) + c.flush()
    else:
        raise ValueError(f"codec {codec} cannot make a bomb")
    return raw_batch(packed, 1, attributes=codec)


# -- request bodies at versions every client-facing broker supports -------------------------

def api_versions_v0(corr: int) -> bytes:
    return frame(18, 0, corr, b"")


def metadata_v1(corr: int, topics: list[str] | None = None) -> bytes:
    body = i32(-1) if topics is None else array([string(t) for t in topics])
    return frame(3, 1, corr, body)


def produce_v3(corr: int, topic: str, partition: int, batch: bytes, acks: int = 1,
               timeout_ms: int = 5000) -> bytes:
    part = i32(partition) + i32(len(batch)) + batch
    body = string(None) + i16(acks) + i32(timeout_ms) + array([string(topic) + array([part])])
    return frame(0, 3, corr, body)


def fetch_v4(corr: int, topic: str, partition: int, offset: int = 0, max_wait_ms: int = 10) -> bytes:
    part = i32(partition) + i64(offset) + i32(1 << 20)
    body = (i32(-1) + i32(max_wait_ms) + i32(1) + i32(1 << 20) + i8(0)
            + array([string(topic) + array([part])]))
    return frame(1, 4, corr, body)


def fetch_v10(corr: int, topic: str, partition: int, offset: int = 0,
              max_wait_ms: int = 0) -> bytes:
    """Fetch v10: the first version that may carry zstd batches; no fetch session."""
    part = i32(partition) + i32(-1) + i64(offset) + i64(-1) + i32(1 << 20)
    body = (i32(-1) + i32(max_wait_ms) + i32(1) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
            + array([string(topic) + array([part])]) + array([]))
    return frame(1, 10, corr, body)


def list_offsets_v1(corr: int, topic: str, partition: int, ts: int = -1) -> bytes:
    body = i32(-1) + array([string(topic) + array([i32(partition) + i64(ts)])])
    return frame(2, 1, corr, body)


def create_topics_v0(corr: int, topic: str, partitions: int = 1) -> bytes:
    t = string(topic) + i32(partitions) + i16(1) + array([]) + array([])
    return frame(19, 0, corr, array([t]) + i32(5000))


def seed_frames(topic: str) -> list[bytes]:
    """Well-formed requests the mutations start from."""
    batch = record_batch([b"seed-%d" % i for i in range(5)])
    return [
        *(produce_v3(20 + codec, topic, 0, record_batch([b"z%d" % i for i in range(4)], codec))
          for codec in (1, 2, 3, 4)),
        api_versions_v0(1),
        metadata_v1(2),
        metadata_v1(3, [topic]),
        produce_v3(4, topic, 0, batch),
        produce_v3(5, topic, 0, batch, acks=0),
        produce_v3(6, topic, 0, batch, acks=-1),
        fetch_v4(7, topic, 0),
        list_offsets_v1(8, topic, 0),
        list_offsets_v1(9, topic, 0, -2),
        create_topics_v0(10, topic + "-x"),
    ]


# -- hostile frames --------------------------------------------------------------------------

HTTP_GET = b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: curl/8\r\n\r\n"


def mutate(rnd: random.Random, seed: bytes) -> bytes:
    """One hostile variant of a well-formed frame."""
    kind = rnd.randrange(10)
    b = bytearray(seed)
    if kind == 0:  # flip a few bits in the request (header or body)
        for _ in range(rnd.randrange(1, 6)):
            pos = rnd.randrange(4, len(b))
            b[pos] ^= 1 << rnd.randrange(8)
        return bytes(b)
    if kind == 1:  # truncated body with a size prefix that says so
        cut = rnd.randrange(4, len(b))
        return i32(cut - 4) + bytes(b[4:cut])
    if kind == 2:  # absurd length inside the body (array count, string or bytes length)
        pos = rnd.randrange(12, max(13, len(b) - 4))
        b[pos:pos + 4] = rnd.choice([i32(0x7FFFFFFF), i32(-2), i32(-0x80000000), i32(1 << 30)])
        return bytes(b)
    if kind == 3:  # unknown api key
        b[4:6] = i16(rnd.choice([-1, 99, 1000, 32767, rnd.randrange(80, 30000)]))
        return bytes(b)
    if kind == 4:  # unsupported version
        b[6:8] = i16(rnd.choice([-1, 99, 1000, 32767, rnd.randrange(20, 30000)]))
        return bytes(b)
    if kind == 5:  # garbage after a correct header: body replaced by random bytes
        head = bytes(b[4:12]) + string("x")
        body = rnd.randbytes(rnd.randrange(0, 200))
        return i32(len(head) + len(body)) + head + body
    if kind == 6:  # size prefix smaller than the request (the rest looks like a new frame)
        size = rnd.randrange(0, len(b) - 4)
        return i32(size) + bytes(b[4:])
    if kind == 7:  # negative or oversized size prefix
        return rnd.choice([i32(-1), i32(-0x80000000), i32(0x7FFFFFFF), i32(200_000_000),
                           HTTP_GET[:4]]) + bytes(b[4:])
    if kind == 8:  # random bytes with a consistent size prefix
        body = rnd.randbytes(rnd.randrange(0, 300))
        return i32(len(body)) + body
    # extra trailing bytes inside the frame
    extra = rnd.randbytes(rnd.randrange(1, 50))
    return i32(len(b) - 4 + len(extra)) + bytes(b[4:]) + extra


# -- sockets ---------------------------------------------------------------------------------

def connect(port: int, timeout: float = 10.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def read_response(s: socket.socket) -> tuple[int, bytes]:
    """(correlation_id, body) of the next response frame (response header v0)."""
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    data = recv_exact(s, size)
    return struct.unpack(">i", data[:4])[0], data[4:]


def produce_v3_error(body: bytes) -> int:
    """The error code of the first partition in a Produce v3 response body."""
    (name_len,) = struct.unpack(">h", body[4:6])
    pos = 6 + name_len + 4 + 4  # topic name, partitions count, partition index
    return struct.unpack(">h", body[pos:pos + 2])[0]


def closed_by_peer(s: socket.socket, timeout: float) -> bool:
    """True when the peer closes (EOF or reset) within timeout, discarding any bytes it sends."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not s.recv(65536):
                return True
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def rss_bytes(pid: int) -> int:
    """Resident set size of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")
