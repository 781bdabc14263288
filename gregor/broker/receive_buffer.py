"""One connection's receive buffer: bytes are read into it, size-prefixed frames leave it as views.

Sans-I/O. The network layer asks `writable()` for room to read into, reports with `received(n)`
how many bytes landed there, and cuts frames with `pending()`, `peek_size()` and `take(size)`.
It may also tell how many bytes have arrived and wait to be read (`waiting`, e.g. the socket's
FIONREAD count): those count as received when a large frame's buffer grows.

Memory follows what has arrived, never what a size prefix declares. When the buffer is full, the
bytes not yet taken move to a new buffer of capacity at most

    max(MIN_CAPACITY, min(declared size of the frame, 2 x bytes of it received so far))

so a peer that declares 100 MB and sends 10 bytes costs MIN_CAPACITY, and every buffer is at
most twice what has arrived for it (or MIN_CAPACITY). A large frame grows by doubling along
frame/2^k, so its last buffer is exactly its size and the bytes moved on the way add up to less
than the frame: at most one extra copy in all. When the rest of the frame is already waiting
(a pipelining client), the first move goes straight to the frame's size and only the first
read's bytes are copied. The floor lets many small frames share one buffer and arrive in one
read.

Frames leave without a copy, as read-only views of the buffer. Bytes under a view are never
written again: reads only go to the part of the buffer past everything received, and a full
buffer is replaced, never reused. A view the decoder keeps (records of a Produce request) keeps
its buffer alive and unchanged; the connection reads on into a fresh one.
"""
from __future__ import annotations

import struct

import numpy as np

_SIZE = struct.Struct(">i")

# Smallest buffer: room for many small requests per read, and the most a connection holds for
# a frame of which less than half of it has arrived.
MIN_CAPACITY = 64 * 1024


class ReceiveBuffer:
    __slots__ = ("_view", "_frames", "start", "end", "moved", "waiting")

    def __init__(self, waiting=None) -> None:
        # () -> bytes arrived beyond those read (asked only when a large frame's buffer grows)
        self.waiting = waiting
        self._view = memoryview(bytearray())   # writable bytes view of the current buffer
        self._frames = self._view               # read-only view of it, for frames handed on
        self.start = 0                          # first byte not yet taken
        self.end = 0                            # end of the bytes received
        self.moved = 0                          # bytes copied to a new buffer so far

    @property
    def capacity(self) -> int:
        return len(self._view)

    def pending(self) -> int:
        """Bytes received and not yet taken as frames."""
        return self.end - self.start

    def writable(self) -> memoryview:
        """Room to read into (never empty); report what was read with received()."""
        if self.end == len(self._view):
            self._move()
        return self._view[self.end:]

    def received(self, n: int) -> None:
        self.end += n

    def peek_size(self) -> int:
        """The size prefix of the next frame (needs pending() >= 4)."""
        return _SIZE.unpack_from(self._view, self.start)[0]

    def prefix(self) -> bytes:
        """Up to 4 bytes where the next size prefix is (for error messages)."""
        return bytes(self._view[self.start:min(self.start + 4, self.end)])

    def take(self, size: int) -> memoryview:
        """The next frame's body (needs pending() >= 4 + size): a read-only view, not a copy."""
        start = self.start + 4
        self.start = end = start + size
        return self._frames[start:end]

    def clear(self) -> None:
        """Drop everything (the connection is gone; so is what `waiting` asked)."""
        self.__init__()

    def _move(self) -> None:
        have = self.end - self.start
        cap = max(MIN_CAPACITY, 2 * have)
        if have >= 4:
            frame = 4 + self.peek_size()
            if have < frame and frame > MIN_CAPACITY:
                # A large frame under way: the largest of frame/2, frame/4, ... that fits the
                # bound, so the buffer ends at the frame's size exactly by doubling and the
                # bytes moved on the way add up to less than one frame.
                arrived = have + (self.waiting() if self.waiting is not None else 0)
                limit = min(frame, max(MIN_CAPACITY, 2 * arrived))
                cap = frame
                while cap > limit:
                    cap = (cap + 1) // 2
        # Uninitialised memory: zero-filling costs as much as the copies saved, and no byte
        # past `end` is ever read or handed on.
        view = memoryview(np.empty(cap, np.uint8))
        if have:
            view[:have] = self._view[self.start:self.end]
            self.moved += have
        self._view, self._frames = view, view.toreadonly()
        self.start, self.end = 0, have
