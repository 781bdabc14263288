"""The consumer (assign and group modes): `Consumer`, `AsyncioConsumer`, and the record shapes
they return."""
from .asyncio_consumer import AsyncioConsumer
from .columns import (CREATE_TIME, LOG_APPEND_TIME, ConsumerRecord, CorruptRecordError,
                      PartitionRecords, decode_partition)
from .consumer import CONSUMER_OPTIONS, Consumer
from .group.consumer_methods import TopicPartition
from .group.membership import CommitFailedError
from .offsets import EARLIEST, LATEST, OffsetAndTimestamp

__all__ = ["Consumer", "AsyncioConsumer", "TopicPartition", "CommitFailedError", "ConsumerRecord", "PartitionRecords", "ArrowRecords",
           "decode_partition_arrow",
           "OffsetAndTimestamp", "CorruptRecordError", "decode_partition", "CONSUMER_OPTIONS",
           "EARLIEST", "LATEST", "CREATE_TIME", "LOG_APPEND_TIME"]


def __getattr__(name):
    # The Arrow output imports pyarrow (~0.4 s): loaded on first use, not with the consumer.
    if name in ("ArrowRecords", "decode_partition_arrow"):
        from . import arrow_records
        return getattr(arrow_records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
