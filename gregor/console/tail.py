"""The live tail: records as they arrive, as server-sent events. Each tail owns an
AsyncioConsumer (its blocking consumer on a private thread) assigned to the partitions at their
end, and stops when the browser goes away (the generator is cancelled) or after max_records.

    event: record
    data: {"partition": 0, "offset": 41, "key": ..., "value": ..., ...}
"""
from __future__ import annotations

import asyncio
import json
import time

from ..client.consumer import AsyncioConsumer
from .records import summary

# A comment line this often keeps proxies from closing an idle stream and lets the server
# notice a client that went away.
_KEEPALIVE_S = 15.0


def sse(event: str, data) -> str:
    body = json.dumps(data, ensure_ascii=False)
    # json.dumps never emits raw newlines, so the data is one line as SSE requires.
    return f"event: {event}\ndata: {body}\n\n"


async def tail_events(settings, topic: str, partitions: list[int], *, value_chars: int,
                      pattern=None, max_records: int | None = None):
    """Async generator of SSE text for records appended to topic after it starts."""
    consumer = AsyncioConsumer(settings.client(**{
        "enable.auto.commit": False, "auto.offset.reset": "latest",
        "fetch.max.wait.ms": 200}))
    sent = 0
    try:
        await consumer.assign([(topic, p, -1) for p in partitions])
        # Resolve the end offsets now, so a record produced after "ready" is never missed.
        for p in partitions:
            await consumer.position(topic, p)
        yield sse("ready", {"topic": topic, "partitions": partitions})
        last = time.monotonic()
        while max_records is None or sent < max_records:
            records = await consumer.poll(0.5)
            for r in records:
                if pattern is not None and not any(
                        b is not None and pattern.search(b) for b in (r.key, r.value)):
                    continue
                yield sse("record", summary(r, value_chars))
                sent += 1
                last = time.monotonic()
                if max_records is not None and sent >= max_records:
                    break
            if time.monotonic() - last > _KEEPALIVE_S:
                yield ": keep-alive\n\n"
                last = time.monotonic()
    except asyncio.CancelledError:
        raise
    except Exception as e:        # shown in the page; the stream ends
        yield sse("error", {"error": str(e)})
    finally:
        await asyncio.shield(consumer.close())
