"""What the foreign-shaped facades over the one producer engine share (sarama.py, writer.py):
closing through the engine and the context manager, and the list-like exception that reports
the failures of many messages at once."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from .producer import Producer


class EngineFacade:
    """A facade owning one Producer engine in self._engine; closing it closes the engine."""

    _engine: Producer   # set by the subclass's __init__

    def close(self, timeout: float | None = None) -> None:
        self._engine.close(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ErrorList(Exception):
    """Several messages' errors in one exception; indexes and iterates like a list."""

    def __init__(self, errors: Iterable = ()):
        super().__init__()
        self.errors = list(errors)

    def __iter__(self):
        return iter(self.errors)

    def __len__(self):
        return len(self.errors)

    def __getitem__(self, i):
        return self.errors[i]
