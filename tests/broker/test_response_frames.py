import pytest

from gregor.broker.response_frames import ZERO_COPY_MIN, encode_response_parts
from gregor.protocol import messages
from gregor.protocol.header import encode_response

FETCH = messages.api("Fetch")


def _body(sizes):
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "topic_id": bytes(16), "partitions": [
            {"partition_index": i, "error_code": 0, "high_watermark": 9,
             "last_stable_offset": 9, "log_start_offset": 0, "aborted_transactions": None,
             "preferred_read_replica": -1,
             "records": None if n is None else bytes([i % 251]) * n}
            for i, n in enumerate(sizes)]}]}


@pytest.mark.parametrize("version", [0, 3, 4, 11, 12, 13, 16])
@pytest.mark.parametrize("sizes", [[], [0], [10], [ZERO_COPY_MIN], [ZERO_COPY_MIN - 1, 100_000],
                                   [100_000, None, 5, 300_000]])
def test_parts_are_the_same_bytes_as_the_plain_encoder(version, sizes):
    body = _body(sizes)
    parts = encode_response_parts(FETCH, version, 42, body)
    assert b"".join(bytes(p) for p in parts) == encode_response(FETCH, version, 42, body)
    large = sum(1 for n in sizes if n is not None and n >= ZERO_COPY_MIN)
    # each large records field is its own part, passed through without a copy
    records = [p["records"] for t in body["responses"] for p in t["partitions"]]
    big = [r for r in records if r is not None and len(r) >= ZERO_COPY_MIN]
    assert sum(1 for p in parts if any(p is r for r in big)) == large
