"""gregor: a Kafka-compatible streaming stack in Python.

The public client classes are imported lazily so that `import gregor` stays cheap for the broker
and for tools that only need the protocol layer.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "Producer": "gregor.client.producer",
    "AsyncioProducer": "gregor.client.producer",
    "RecordMetadata": "gregor.client.producer",
    "SyncProducer": "gregor.client.producer",
    "AsyncProducer": "gregor.client.producer",
    "Writer": "gregor.client.producer",
    "Consumer": "gregor.client.consumer",
    "AsyncioConsumer": "gregor.client.consumer",
    "ShareConsumer": "gregor.client.consumer.share",
    "AsyncioShareConsumer": "gregor.client.consumer.asyncio_share",
    "TopicPartition": "gregor.client.consumer",
    "CommitFailedError": "gregor.client.consumer",
    "AdminClient": "gregor.client.admin",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'gregor' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)
