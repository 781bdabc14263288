"""BufferPool: the buffer.memory bound, max.block.ms waits, fairness."""
from __future__ import annotations

import threading

import pytest

from gregor.client.errors import KafkaTimeoutError
from gregor.client.producer.buffer_pool import BufferPool


def test_allocate_and_release():
    pool = BufferPool(1000)
    pool.allocate(600, 0)
    assert pool.available == 400
    pool.deallocate(600)
    assert pool.available == 1000


def test_blocks_then_times_out_with_clear_message():
    pool = BufferPool(1000)
    pool.allocate(900, 0)
    with pytest.raises(KafkaTimeoutError, match="max.block.ms"):
        pool.allocate(200, 0.05)
    assert pool.available == 100          # the failed wait took nothing
    assert pool.queued == 0
    assert pool.wait_time_total > 0


def test_waiter_is_woken_by_release():
    pool = BufferPool(1000)
    pool.allocate(1000, 0)
    got = threading.Event()

    def waiter():
        pool.allocate(500, 10)
        got.set()
    t = threading.Thread(target=waiter)
    t.start()
    for _ in range(500):
        if pool.queued:
            break
        threading.Event().wait(0.001)
    assert pool.queued == 1 and not got.is_set()
    pool.deallocate(1000)
    t.join(5)
    assert got.is_set() and pool.available == 500


def test_on_wait_hook_fires_when_a_thread_must_wait():
    pool = BufferPool(100)
    calls = []
    pool.on_wait = lambda: calls.append(1)
    pool.allocate(100, 0)
    with pytest.raises(KafkaTimeoutError):
        pool.allocate(10, 0.01)
    assert calls == [1]


def test_request_larger_than_pool_is_refused_at_once():
    with pytest.raises(ValueError, match="buffer.memory"):
        BufferPool(100).allocate(101, 10)


def test_close_releases_waiters():
    pool = BufferPool(10)
    pool.allocate(10, 0)
    errors = []

    def waiter():
        try:
            pool.allocate(5, 30)
        except KafkaTimeoutError as e:
            errors.append(e)
    t = threading.Thread(target=waiter)
    t.start()
    for _ in range(500):
        if pool.queued:
            break
        threading.Event().wait(0.001)
    pool.close()
    t.join(5)
    assert not t.is_alive() and errors
