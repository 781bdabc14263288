"""The producer: one engine (Producer) and thin facades over it.

Names are resolved lazily so importing one facade does not import the others.
"""
from __future__ import annotations

import importlib

_LAZY = {
    "Producer": ".producer",
    "RecordMetadata": ".batch",
    "FutureRecordMetadata": ".batch",
    "ProducerInterceptor": ".interceptors",
    "ProducerRecord": ".interceptors",
    "SyncProducer": ".sarama",
    "AsyncProducer": ".sarama",
    "ProducerMessage": ".sarama",
    "ProducerError": ".sarama",
    "PartitionOffsetMetadata": ".sarama",
    "Writer": ".writer",
    "Message": ".writer",
    "WriteErrors": ".writer",
    "AsyncioProducer": ".asyncio_producer",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value
