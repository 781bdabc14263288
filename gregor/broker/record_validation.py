"""Checks on the record bytes of one partition of a produce request, before they reach the log.

Like Kafka's LogValidator, without building record objects where it can avoid it: each v2 batch
gets its size, CRC and structure checked (`validate_batch`), its timestamps compared with the
topic's limits; legacy message sets (magic 0/1, Produce v0-v2) are up-converted to one v2
batch first. The result is the bytes to append.
"""
from __future__ import annotations

import struct

from ..protocol.errors import (CorruptMessageError, InvalidRecordError, InvalidTimestampError,
                               KafkaError, MessageTooLargeError)
from ..protocol.primitives import DecodeError
from ..protocol.records.header import (CONTROL_BIT, LOG_OVERHEAD, MAGIC_OFFSET)

_LEN = struct.Struct(">qi")
_ATTR_TS = struct.Struct(">hiqq")     # attributes, last_offset_delta, base_ts, max_ts @21
LONG_MAX = (1 << 63) - 1


class Validated:
    __slots__ = ("data", "batches", "records", "max_timestamp")

    def __init__(self, data: bytes, batches: int, records: int, max_timestamp: int):
        self.data = data
        self.batches = batches
        self.records = records
        self.max_timestamp = max_timestamp


def validate_records(records, request_version: int, topic_config: dict, now_ms: int) -> Validated:
    """The bytes to append for one partition; raises CorruptMessageError, InvalidRecordError,
    MessageTooLargeError or InvalidTimestampError (Kafka's per-partition errors). records may
    be bytes or a memoryview of the request (the server does not copy them out); v2 batches
    are appended from it as they are."""
    max_message = int(topic_config.get("max.message.bytes", 1048588))
    if not records:
        raise InvalidRecordError("the produce request carries no record batch for this "
                                 "partition")
    if len(records) <= MAGIC_OFFSET:
        raise CorruptMessageError(f"{len(records)} bytes of records cannot hold a batch header")
    magic = records[MAGIC_OFFSET]
    if magic > 127:
        magic -= 256
    if magic not in (0, 1, 2):
        raise CorruptMessageError(f"unknown record format magic {magic}")
    if magic < 2:
        if request_version >= 3:
            raise InvalidRecordError(f"Produce v{request_version} must carry record batches "
                                     f"with magic 2, not magic {magic} message sets")
        # legacy message sets are rare and rebuilt anyway: give that code plain bytes
        return _up_convert(bytes(records), max_message, topic_config, now_ms)
    if request_version < 3:
        raise InvalidRecordError(f"Produce v{request_version} carries magic 0/1 message sets; "
                                 "record batches (magic 2) need Produce v3 or later")
    from ..protocol.records.batch import validate_batch

    n = len(records)
    pos = batches = count = 0
    max_ts = -1
    check_ts = topic_config.get("message.timestamp.type", "CreateTime") == "CreateTime" and (
        _limit(topic_config, "message.timestamp.before.max.ms") < LONG_MAX
        or _limit(topic_config, "message.timestamp.after.max.ms") < LONG_MAX
        or _limit(topic_config, "message.timestamp.difference.max.ms") < LONG_MAX)
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            raise CorruptMessageError(f"{n - pos} stray bytes after the last record batch")
        _, length = _LEN.unpack_from(records, pos)
        size = length + LOG_OVERHEAD
        if length < 0 or pos + size > n:
            raise CorruptMessageError(f"record batch at byte {pos} claims {length} bytes; only "
                                      f"{n - pos - LOG_OVERHEAD} follow")
        if size > max_message:
            raise MessageTooLargeError(
                f"record batch of {size} bytes is larger than max.message.bytes={max_message}; "
                "send smaller batches (batch.size) or raise the topic's max.message.bytes")
        if records[pos + MAGIC_OFFSET] != 2:
            raise CorruptMessageError(f"record batch at byte {pos} mixes magic "
                                      f"{records[pos + MAGIC_OFFSET]} into a magic 2 request")
        try:
            h = validate_batch(records, pos, from_client=True)
        except KafkaError:
            raise                   # already CORRUPT_MESSAGE or INVALID_RECORD
        except DecodeError as e:
            raise CorruptMessageError(str(e)) from None
        batches += 1
        if batches > 1:
            raise InvalidRecordError(f"Produce v{request_version} allows exactly one record "
                                     "batch per partition; this one carries more")
        if h.attributes & CONTROL_BIT:
            raise InvalidRecordError("clients may not produce control batches")
        count += h.records_count
        if check_ts:
            _check_timestamp(h.base_timestamp, topic_config, now_ms)
            _check_timestamp(h.max_timestamp, topic_config, now_ms)
        if h.max_timestamp > max_ts:
            max_ts = h.max_timestamp
        pos += size
    return Validated(records, batches, count, max_ts)


def _limit(cfg: dict, key: str) -> int:
    v = cfg.get(key)
    return LONG_MAX if v is None else int(v)


def _check_timestamp(ts: int, cfg: dict, now_ms: int) -> None:
    before = min(_limit(cfg, "message.timestamp.before.max.ms"),
                 _limit(cfg, "message.timestamp.difference.max.ms"))
    after = min(_limit(cfg, "message.timestamp.after.max.ms"),
                _limit(cfg, "message.timestamp.difference.max.ms"))
    if ts < 0:
        return          # "no timestamp" (-1) is not checked, as in Kafka
    if now_ms - ts > before:
        raise InvalidTimestampError(
            f"record timestamp {ts} is {now_ms - ts} ms in the past; the topic accepts at most "
            f"{before} ms (message.timestamp.before.max.ms)")
    if ts - now_ms > after:
        raise InvalidTimestampError(
            f"record timestamp {ts} is {ts - now_ms} ms in the future; the topic accepts at "
            f"most {after} ms (message.timestamp.after.max.ms)")


def _up_convert(records, max_message: int, cfg: dict, now_ms: int) -> Validated:
    from ..protocol.records import legacy

    n = len(records)
    pos = 0
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            raise CorruptMessageError(f"{n - pos} stray bytes after the last message")
        _, length = _LEN.unpack_from(records, pos)
        if length < 0 or pos + LOG_OVERHEAD + length > n:
            raise CorruptMessageError(f"message at byte {pos} claims {length} bytes; only "
                                      f"{n - pos - LOG_OVERHEAD} follow")
        if length + LOG_OVERHEAD > max_message:
            raise MessageTooLargeError(
                f"message of {length + LOG_OVERHEAD} bytes is larger than max.message.bytes="
                f"{max_message}")
        pos += LOG_OVERHEAD + length
    try:
        data = legacy.up_convert(bytes(records), base_offset=0)
    except KafkaError:
        raise
    except (DecodeError, ValueError) as e:
        raise CorruptMessageError(f"legacy message set does not decode: {e}") from None
    from ..protocol.records.header import parse_header
    try:
        h = parse_header(data, 0)
    except DecodeError as e:
        raise CorruptMessageError(str(e)) from None
    if cfg.get("message.timestamp.type", "CreateTime") == "CreateTime":
        _check_timestamp(h.max_timestamp, cfg, now_ms)
    return Validated(data, 1, h.records_count, h.max_timestamp)
