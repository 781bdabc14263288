"""Record compression: none, gzip, snappy, lz4 and zstd behind compress() / decompress().

Codec ids are the values of the compression bits in batch and message attributes.

Choices, and why:
- gzip: zlib (standard gzip members; several concatenated members are accepted on read).
  Default level 6, which is what Kafka's producers use when compression.gzip.level is unset.
- snappy: written in the block framing of the snappy-java library that Kafka's Java clients use
  (an 8-byte magic, two int32 version fields, then int32-length-prefixed raw snappy blocks of up
  to 32 KiB). Every Kafka client reads that framing (snappy-java, librdkafka, kafka-python,
  sarama, franz-go all detect the magic). On read we accept both that framing and plain raw
  snappy, since librdkafka and some Go clients produce plain raw snappy.
- lz4: the standard LZ4 frame format, independent blocks (Kafka's Java reader decodes each block
  on its own, so linked blocks would break it), content size stored so the reader can allocate
  exactly once. Old message format v0 (magic 0) carried LZ4 frames whose header checksum byte
  was computed over the wrong bytes (the 4-byte frame magic was included). We write that broken
  byte only when asked (`legacy_lz4_checksum=True`, used for magic 0 message sets, which is what
  Kafka's own v0 reader expects and ignores), and on read `lenient_lz4_checksum=True` (used for
  magic 0 and 1) re-computes the byte before decoding, so frames with either checksum decode.
  The CRC of the enclosing message still protects the bytes.
- zstd: the zstandard library, level 3 (Kafka's default), one frame with its content size.

Decompression is always bounded by max_size (see DEFAULT_MAX_DECOMPRESSED): output is produced
in bounded steps and we stop as soon as it would pass the cap, so a tiny "decompression bomb"
costs at most max_size bytes of memory before it is rejected with a DecodeError.
"""
from __future__ import annotations

import struct
import threading
import zlib

import cramjam
import lz4.frame as _lz4f
import zstandard

from .primitives import DecodeError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
_BY_NAME = {name: i for i, name in enumerate(CODEC_NAMES)}
_BY_NAME.update({"": NONE, "uncompressed": NONE, "producer": NONE})

# Why a cap: a compressed batch inflates by up to ~1000x (gzip) or far more (zstd, lz4 runs),
# so without one a single 1 MiB produce request or fetch response could make us allocate
# gigabytes. 64 MiB allows a full 1 MiB batch (Kafka's default max.message.bytes) compressing
# 64:1, well beyond realistic data, while keeping a hostile batch's cost small. Callers that
# accept bigger batches pass a larger max_size.
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

# Output is produced in steps of at most this many bytes when the final size is unknown: big
# enough that typical batches decode in one step, small enough that a single step never costs
# a large allocation (lz4 and zlib allocate the step size up front).
_STEP = 4 * 1024 * 1024

GZIP_DEFAULT_LEVEL = 6
ZSTD_DEFAULT_LEVEL = 3

# ---------------------------------------------------------------------------------------------
# codec ids


def codec_id(codec) -> int:
    """Codec id from a name ("lz4", "GZIP", "none"), None (= none) or an id."""
    if codec is None:
        return NONE
    if isinstance(codec, int):
        if not 0 <= codec < len(CODEC_NAMES):
            raise ValueError(f"unknown compression codec id {codec}; use 0-4 "
                             f"({', '.join(CODEC_NAMES)})")
        return codec
    try:
        return _BY_NAME[str(codec).strip().lower()]
    except KeyError:
        raise ValueError(f"unknown compression type {codec!r}; use one of "
                         f"{', '.join(CODEC_NAMES)}") from None


def codec_name(codec: int) -> str:
    return CODEC_NAMES[codec_id(codec)]


# ---------------------------------------------------------------------------------------------
# public entry points


def compress(codec: int, data, level: int | None = None, *,
             legacy_lz4_checksum: bool = False) -> bytes:
    """Compress data with the codec (an id, or a name such as "lz4")."""
    if not isinstance(codec, int):
        codec = codec_id(codec)
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        c = zlib.compressobj(GZIP_DEFAULT_LEVEL if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _snappy_java_compress(data)
    if codec == LZ4:
        if legacy_lz4_checksum:
            return _lz4_compress_legacy(data)
        return _lz4f.compress(data, block_size=_lz4f.BLOCKSIZE_MAX64KB, block_linked=False,
                              store_size=True, compression_level=level or 0)
    if codec == ZSTD:
        return _zstd_compressor(ZSTD_DEFAULT_LEVEL if level is None else level).compress(data)
    raise ValueError(f"unknown compression codec id {codec}")


def decompress(codec: int, data, max_size: int = DEFAULT_MAX_DECOMPRESSED, *,
               lenient_lz4_checksum: bool = False) -> bytes:
    """Decompress data; raises DecodeError for corrupt input or output larger than max_size."""
    if not isinstance(codec, int):
        codec = codec_id(codec)
    if codec == NONE:
        if len(data) > max_size:
            raise _too_big(max_size)
        return bytes(data)
    try:
        if codec == GZIP:
            return _gunzip(data, max_size)
        if codec == SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec == LZ4:
            if lenient_lz4_checksum:
                data = fix_lz4_header_checksum(data)
            return _lz4_decompress(data, max_size)
        if codec == ZSTD:
            return _zstd_decompress(data, max_size)
    except DecodeError:
        raise
    except (zlib.error, cramjam.DecompressionError, zstandard.ZstdError, RuntimeError,
            ValueError, struct.error, MemoryError) as e:
        raise DecodeError(f"corrupt {CODEC_NAMES[codec]} data: {e}") from None
    raise DecodeError(f"unknown compression codec id {codec} in record attributes "
                      f"(known: 0-4, {', '.join(CODEC_NAMES)})")


def _too_big(max_size: int) -> DecodeError:
    return DecodeError(f"decompressed data exceeds the cap of {max_size} bytes; the batch is "
                       f"corrupt or hostile, or the cap (max_size) is set too low for it")


# ---------------------------------------------------------------------------------------------
# gzip


def _gunzip(data, max_size: int) -> bytes:
    out = []
    total = 0
    rest = data
    while True:
        # 47 = accept a gzip or zlib header (auto-detect), 15-bit window.
        d = zlib.decompressobj(47)
        buf = rest
        while True:
            chunk = d.decompress(buf, min(_STEP, max_size + 1 - total))
            total += len(chunk)
            if total > max_size:
                raise _too_big(max_size)
            out.append(chunk)
            if d.eof:
                break
            buf = d.unconsumed_tail
            if not buf and not chunk:
                raise DecodeError("truncated gzip data")
        rest = d.unused_data
        if not rest:
            break
    return b"".join(out)


# ---------------------------------------------------------------------------------------------
# snappy

SNAPPY_JAVA_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_JAVA_HEADER = SNAPPY_JAVA_MAGIC + struct.pack(">ii", 1, 1)
# snappy-java's default block size; each block is compressed on its own.
_SNAPPY_JAVA_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")


def _snappy_java_compress(data) -> bytes:
    view = memoryview(data)
    parts = [_SNAPPY_JAVA_HEADER]
    # at least one block, so that readers which need more than the header see the framing
    for start in range(0, max(len(view), 1), _SNAPPY_JAVA_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + _SNAPPY_JAVA_BLOCK]))
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw(block, limit: int, max_size: int) -> bytes:
    """Decode one raw snappy block whose output must not exceed limit bytes."""
    claimed = cramjam.snappy.decompress_raw_len(block)
    if claimed > limit:
        raise _too_big(max_size)
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data, max_size: int) -> bytes:
    if len(data) >= 16 and bytes(data[:8]) == SNAPPY_JAVA_MAGIC:
        # The version fields are not checked: some producers write them little-endian.
        view = memoryview(data)
        pos, n, total = 16, len(view), 0
        out = []
        while pos < n:
            if n - pos < 4:
                raise DecodeError("truncated snappy-java block header")
            size = _I32.unpack_from(view, pos)[0]
            pos += 4
            if size < 0 or size > n - pos:
                raise DecodeError(f"snappy-java block of {size} bytes with {n - pos} left")
            block = _snappy_raw(view[pos:pos + size], max_size - total, max_size)
            total += len(block)
            out.append(block)
            pos += size
        return b"".join(out)
    return _snappy_raw(data, max_size, max_size)


# ---------------------------------------------------------------------------------------------
# lz4

_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def _lz4_descriptor_end(data) -> int:
    """Index of the header checksum byte of the LZ4 frame at the start of data."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_MAGIC:
        raise DecodeError("not an LZ4 frame (bad magic)")
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= end:
        raise DecodeError("truncated LZ4 frame header")
    return end


def fix_lz4_header_checksum(data) -> bytes:
    """Return data with the first frame's header checksum recomputed (see module docs)."""
    end = _lz4_descriptor_end(data)
    good = (xxh32(bytes(data[4:end])) >> 8) & 0xFF
    if data[end] == good:
        return data
    return b"".join((bytes(data[:end]), bytes((good,)), bytes(data[end + 1:])))


def _lz4_compress_legacy(data) -> bytes:
    """An LZ4 frame as Kafka's magic-0 writer made it: no content size, 64 KiB independent
    blocks, and the header checksum computed over magic + descriptor."""
    frame = _lz4f.compress(data, block_size=_lz4f.BLOCKSIZE_MAX64KB, block_linked=False,
                           store_size=False)
    broken = (xxh32(frame[:6]) >> 8) & 0xFF
    return frame[:6] + bytes((broken,)) + frame[7:]


def _lz4_decompress(data, max_size: int) -> bytes:
    out = []
    total = 0
    rest = data
    while True:
        _lz4_descriptor_end(rest)   # checks magic and header length
        step = _STEP
        if rest[4] & 0x08:   # content size present: one exact allocation
            claimed = struct.unpack_from("<Q", rest, 6)[0]
            if claimed > max_size - total:
                raise _too_big(max_size)
            step = claimed + 1
        d = _lz4f.LZ4FrameDecompressor()
        chunk = d.decompress(rest, max_length=min(step, max_size + 1 - total))
        while True:
            total += len(chunk)
            if total > max_size:
                raise _too_big(max_size)
            out.append(chunk)
            if d.eof:
                break
            if d.needs_input:
                raise DecodeError("truncated LZ4 frame")
            chunk = d.decompress(b"", max_length=min(_STEP, max_size + 1 - total))
        rest = d.unused_data
        if not rest:
            break
    return b"".join(out)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 (used only for LZ4 frame header checksums, which cover a few bytes)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos:pos + 4], "little")
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[pos:pos + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# ---------------------------------------------------------------------------------------------
# zstd

_local = threading.local()   # zstandard contexts may not be shared between threads


def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    cache = getattr(_local, "compressors", None)
    if cache is None:
        cache = _local.compressors = {}
    c = cache.get(level)
    if c is None:
        c = cache[level] = zstandard.ZstdCompressor(level=level)
    return c


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = _local.decompressor = zstandard.ZstdDecompressor()
    return d


def _zstd_decompress(data, max_size: int) -> bytes:
    claimed = zstandard.frame_content_size(data)
    if claimed > max_size:
        raise _too_big(max_size)
    dctx = _zstd_decompressor()
    if claimed >= 0:
        try:
            # allocates exactly the claimed size; fails if the frame disagrees or more follows
            return dctx.decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass   # several frames, or corrupt: the careful path below tells which
    # Unknown size (streaming writers such as the Java client) or several frames. The stream
    # reader silently stops at truncated input, so check the frame structure first.
    _check_zstd_frames(data)
    reader = dctx.stream_reader(data, read_across_frames=True)
    out = []
    total = 0
    while True:
        chunk = reader.read(min(_STEP, max_size + 1 - total))
        if not chunk:
            break
        total += len(chunk)
        if total > max_size:
            raise _too_big(max_size)
        out.append(chunk)
    return b"".join(out)


_ZSTD_MAGIC = 0xFD2FB528
_FCS_SIZES = (0, 2, 4, 8)
_DID_SIZES = (0, 1, 2, 4)


def _check_zstd_frames(data) -> None:
    """Walk zstd frame and block headers; raise DecodeError unless data is complete frames."""
    pos, n = 0, len(data)
    if n == 0:
        raise DecodeError("empty zstd data")
    while pos < n:
        if n - pos < 5:
            raise DecodeError("truncated zstd frame header")
        magic = int.from_bytes(data[pos:pos + 4], "little")
        if 0x184D2A50 <= magic <= 0x184D2A5F:          # skippable frame
            if n - pos < 8:
                raise DecodeError("truncated zstd skippable frame")
            pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
            continue
        if magic != _ZSTD_MAGIC:
            raise DecodeError("not a zstd frame (bad magic)")
        fhd = data[pos + 4]
        single_segment = fhd & 0x20
        fcs = _FCS_SIZES[fhd >> 6] or (1 if single_segment else 0)
        pos += 5 + (0 if single_segment else 1) + _DID_SIZES[fhd & 3] + fcs
        while True:
            if n - pos < 3:
                raise DecodeError("truncated zstd block header")
            bh = int.from_bytes(data[pos:pos + 3], "little")
            btype, bsize = (bh >> 1) & 3, bh >> 3
            if btype == 3:
                raise DecodeError("reserved zstd block type")
            pos += 3 + (1 if btype == 1 else bsize)
            if bh & 1:
                break
        if fhd & 0x04:
            pos += 4
        if pos > n:
            raise DecodeError("truncated zstd frame")
