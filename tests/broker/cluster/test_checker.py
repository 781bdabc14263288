"""The replication checker must catch every kind of broken promise it names (a checker that
cannot fail proves nothing)."""
from tests.support.checker import ReplicationChecker


def feed(acked, read):
    c = ReplicationChecker()
    for v, p, o in acked:
        c.sent_record(v)
        c.acknowledged(v, p, o)
    for p, o, v in read:
        c.consumed(p, o, v.split(b":")[0], v)
    return c.problems()


def test_clean_run_has_no_problems():
    assert feed([(b"k:0", 0, 0), (b"k:1", 0, 1)], [(0, 0, b"k:0"), (0, 1, b"k:1")]) == []


def test_each_broken_promise_is_reported():
    assert feed([(b"k:0", 0, 0)], [])[0].startswith("lost")
    assert feed([(b"k:0", 0, 0)], [(0, 3, b"k:0")])[0].startswith("moved")
    dup = feed([(b"k:0", 0, 0)], [(0, 0, b"k:0"), (0, 5, b"k:0")])
    assert any(p.startswith("duplicated") for p in dup)
    bad = feed([(b"k:0", 0, 0), (b"j:0", 0, 1)], [(0, 0, b"k:0"), (0, 0, b"j:0"),
                                                  (0, 1, b"j:0")])
    assert any(p.startswith("inconsistent") for p in bad)
    order = feed([(b"k:0", 0, 0), (b"k:1", 0, 1)], [(0, 0, b"k:1"), (0, 1, b"k:0")])
    assert any(p.startswith("out of order") for p in order)
    c = ReplicationChecker()
    c.sent_record(b"k:0")
    c.consumed(0, 0, b"x", b"x:9")
    assert any(p.startswith("unknown") for p in c.problems())
