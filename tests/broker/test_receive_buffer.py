"""The receive buffer alone (sans I/O): frames cut the same whatever the reads, memory bounded by
what arrived, at most one extra copy of a large frame, views never overwritten."""
import random
import struct

import pytest

from gregor.broker.receive_buffer import MIN_CAPACITY, ReceiveBuffer


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def body(i: int, n: int) -> bytes:
    return bytes((i * 7 + k) % 251 for k in range(min(n, 1000))) * (n // 1000) + \
        bytes((i + k) % 253 for k in range(n % 1000))


class Reader:
    """Reads a stream into a ReceiveBuffer in given read sizes, like a transport would, and
    cuts frames after each read, like the connection does; checks the memory bound on the way.
    With waiting=True, the rest of each read is reported as waiting in the socket."""

    def __init__(self, waiting=False):
        self.rx = ReceiveBuffer(waiting=(lambda: len(self._data)) if waiting else None)
        self._data = b""
        self.frames = []          # the views handed on, kept like a decoder may keep them
        self.most_over = 0        # largest capacity seen beyond the bound

    def read(self, data: bytes) -> None:
        self._data = data
        while self._data:
            arrived = self.rx.pending() + (len(self._data) if self.rx.waiting else 0)
            room = self.rx.writable()
            assert len(room) > 0
            self._check_bound(arrived)
            n = min(len(room), len(self._data))
            room[:n] = self._data[:n]
            self.rx.received(n)
            self._data = self._data[n:]
            self.cut()

    def cut(self) -> None:
        rx = self.rx
        while rx.pending() >= 4 and rx.pending() - 4 >= rx.peek_size():
            self.frames.append(rx.take(rx.peek_size()))

    def _check_bound(self, arrived) -> None:
        # capacity <= max(MIN_CAPACITY, 2 x bytes arrived of what is not yet taken)
        self.most_over = max(self.most_over,
                             self.rx.capacity - max(MIN_CAPACITY, 2 * arrived))


@pytest.mark.parametrize("waiting", [False, True])
def test_a_huge_declared_frame_with_a_few_bytes_holds_min_capacity(waiting):
    r = Reader(waiting)
    r.read(struct.pack(">i", 100_000_000) + b"x" * 6)
    assert r.rx.capacity <= MIN_CAPACITY and r.rx.pending() == 10
    r.read(b"y" * 200_000)
    assert r.rx.capacity <= 2 * r.rx.pending()
    assert r.most_over <= 0 and not r.frames


def test_many_small_frames_in_one_read_share_one_buffer():
    bodies = [body(i, 20 + i) for i in range(300)]
    stream = b"".join(frame(b) for b in bodies)
    assert len(stream) < MIN_CAPACITY
    r = Reader()
    room = r.rx.writable()
    room[:len(stream)] = stream              # one read brings them all
    r.rx.received(len(stream))
    r.cut()
    assert [bytes(f) for f in r.frames] == bodies
    assert r.rx.capacity == MIN_CAPACITY and r.rx.moved == 0


STREAM_BODIES = [body(0, 10), body(1, 0), body(2, 300), body(3, 70_000), body(4, 5),
                 body(5, 200_000), body(6, 1)]
STREAM = b"".join(frame(b) for b in STREAM_BODIES)


@pytest.mark.parametrize("waiting", [False, True])
def test_one_byte_reads_cut_the_same_frames_within_the_bound(waiting):
    r = Reader(waiting)
    for i in range(len(STREAM)):
        r.read(STREAM[i:i + 1])
    assert [bytes(f) for f in r.frames] == STREAM_BODIES
    assert r.most_over <= 0


@pytest.mark.parametrize("window", [(0, 400), (MIN_CAPACITY - 300, MIN_CAPACITY + 300),
                                    (70_300, 70_700), (len(STREAM) - 300, len(STREAM))])
@pytest.mark.parametrize("waiting", [False, True])
def test_a_cut_at_every_byte_boundary_gives_the_same_frames(window, waiting):
    for cut in range(*window):
        r = Reader(waiting)
        r.read(STREAM[:cut])
        r.read(STREAM[cut:])
        assert [bytes(f) for f in r.frames] == STREAM_BODIES, cut
        assert r.most_over <= 0, cut


def test_random_reads_give_the_same_frames_and_kept_views_never_change():
    rnd = random.Random(7)
    kept = []
    for i in range(40):
        r = Reader(waiting=i % 2 == 1)
        pos = 0
        while pos < len(STREAM):
            n = rnd.choice((1, 3, 4, 5, 100, 4096, 65_536, 300_000))
            r.read(STREAM[pos:pos + n])
            pos += n
        assert r.most_over <= 0
        kept.append(r.frames)
    # every view handed on, read again after all the later reads: still the bytes it framed
    for frames in kept:
        assert [bytes(f) for f in frames] == STREAM_BODIES


@pytest.mark.parametrize("size", [MIN_CAPACITY + 1, 1_000_000, (1 << 20) + 8, 3_333_333])
@pytest.mark.parametrize("read_size", [1_000, 65_536, 256 * 1024])
@pytest.mark.parametrize("offset", [0, 10, 40_000])
def test_a_large_frame_costs_at_most_one_extra_copy_and_ends_in_a_buffer_of_its_size(
        size, read_size, offset):
    lead = frame(b"s" * (offset - 4)) if offset else b""   # a small frame before it
    big = frame(b"b" * size)
    data = lead + big
    r = Reader()
    for i in range(0, len(data), read_size):
        r.read(data[i:i + read_size])
    assert [len(f) for f in r.frames] == ([offset - 4] if offset else []) + [size]
    assert r.rx.moved <= len(big)          # doubling along frame/2^k: one frame's worth at most
    assert r.rx.capacity == len(big)       # the last buffer is the frame, nothing more
    assert r.most_over <= 0


def test_the_next_frame_goes_to_a_fresh_buffer_after_a_large_one():
    big, small = frame(b"b" * 300_000), frame(b"tail")
    r = Reader()
    r.read(big + small)
    assert [bytes(f) for f in r.frames] == [b"b" * 300_000, b"tail"]
    assert r.frames[0].obj is not r.frames[1].obj
    assert r.rx.capacity == MIN_CAPACITY


def test_frames_are_read_only_views_not_copies():
    r = Reader()
    r.read(frame(b"abc") + frame(b"defg"))
    a, b = r.frames
    assert a.readonly and b.readonly
    assert a.obj is b.obj                 # both views of the one buffer they arrived in
    with pytest.raises(TypeError):
        a[0] = 0


def test_clear_drops_the_buffer():
    r = Reader()
    r.read(struct.pack(">i", 500_000) + b"x" * 100_000)
    assert r.rx.capacity > MIN_CAPACITY
    r.rx.clear()
    assert r.rx.capacity == 0 and r.rx.pending() == 0


@pytest.mark.parametrize("offset", [0, 10, 40_000])
def test_a_large_frame_already_waiting_is_read_into_its_own_size_after_one_small_copy(offset):
    lead = frame(b"s" * (offset - 4)) if offset else b""
    big = frame(b"b" * 1_000_000)
    r = Reader(waiting=True)
    r.read(lead + big)                     # all of it has arrived; reads take what fits
    assert [len(f) for f in r.frames] == ([offset - 4] if offset else []) + [1_000_000]
    assert r.rx.moved <= MIN_CAPACITY      # only what the first read brought
    assert r.rx.capacity == len(big) and r.most_over <= 0


def test_what_waiting_reports_never_grows_a_buffer_past_the_declared_frame():
    rx = ReceiveBuffer(waiting=lambda: 1 << 40)     # a wildly wrong count
    room = rx.writable()
    data = struct.pack(">i", 300_000) + b"x" * (len(room) - 4)
    room[:] = data
    rx.received(len(data))
    rx.writable()
    assert rx.capacity == 300_004
