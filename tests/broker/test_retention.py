"""The broker's retention pass: old segments go, the log start moves, readers are told."""
import time

from .handler_harness import batch, call, create, produce_body, run_broker


def test_retention_deletes_old_segments_below_the_high_watermark(tmp_path):
    async def s(b):
        await create(b, "old", configs={"segment.bytes": 200, "retention.ms": 60_000})
        old = int(time.time() * 1000) - 3_600_000           # an hour ago: past retention
        for i in range(5):
            await call(b, "Produce", 8, produce_body("old", batch(b"x%d" % i, ts=old)))
        await call(b, "Produce", 8, produce_body("old", batch(b"new")))
        p = b.replica_manager.get("old", 0)
        assert len(p.log.segments) == 3       # 2 batches per 200-byte segment
        assert b.apply_retention() == 2       # the active segment (old + new) stays
        assert p.log.log_start_offset == 4 and p.high_watermark == 6
        r = await call(b, "ListOffsets", 1, {"replica_id": -1, "topics": [{"name": "old",
                       "partitions": [{"partition_index": 0, "timestamp": -2}]}]})
        assert r["topics"][0]["partitions"][0]["offset"] == 4
        assert b.apply_retention() == 0
    run_broker(tmp_path, s)
