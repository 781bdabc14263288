"""Producer interceptors: the record shape they see, and the interface they implement."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ProducerRecord:
    topic: str
    partition: int | None
    key: object
    value: object
    headers: list | None
    timestamp_ms: int | None


class ProducerInterceptor:
    """Subclass and override what you need. on_send may return a changed record (or None to
    keep it). Exceptions are logged and never stop the producer."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord | None:
        return record

    def on_acknowledgement(self, metadata, exception) -> None:
        pass

    def on_send_error(self, topic: str, exception: Exception) -> None:
        pass

    def close(self) -> None:
        pass
