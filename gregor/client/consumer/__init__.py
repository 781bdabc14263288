"""The consumer (assign mode): `Consumer`, `AsyncioConsumer`, and the record shapes they return."""
from .asyncio_consumer import AsyncioConsumer
from .columns import (CREATE_TIME, LOG_APPEND_TIME, ConsumerRecord, CorruptRecordError,
                      PartitionRecords, decode_partition)
from .consumer import CONSUMER_OPTIONS, Consumer
from .offsets import EARLIEST, LATEST, OffsetAndTimestamp

__all__ = ["Consumer", "AsyncioConsumer", "ConsumerRecord", "PartitionRecords",
           "OffsetAndTimestamp", "CorruptRecordError", "decode_partition", "CONSUMER_OPTIONS",
           "EARLIEST", "LATEST", "CREATE_TIME", "LOG_APPEND_TIME"]
