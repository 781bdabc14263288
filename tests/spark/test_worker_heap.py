"""worker_heap.settle: long-lived objects are frozen out of later collections; a task's
garbage is collected, not frozen; a settled worker is left alone."""
from __future__ import annotations

import gc
import weakref

import pytest

from gregor.spark import worker_heap


class Node:
    def __init__(self):
        self.me = self        # a cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_settle_freezes_long_lived_objects_and_collects_garbage_first():
    kept = [Node() for _ in range(worker_heap.REFREEZE_ABOVE + 1000)]
    gc.collect()                                  # they survive a full collection: gen 2
    garbage = Node()
    dead = weakref.ref(garbage)
    del garbage
    worker_heap.settle()
    assert dead() is None, "the task's cyclic garbage was frozen instead of collected"
    assert gc.get_freeze_count() >= len(kept)
    assert len(gc.get_objects(generation=2)) < worker_heap.REFREEZE_ABOVE


def test_a_settled_worker_is_not_collected_again(monkeypatch):
    worker_heap.settle()
    gc.collect()
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append("collect"))
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    worker_heap.settle()                          # few unfrozen old objects: nothing to do
    assert calls == []
