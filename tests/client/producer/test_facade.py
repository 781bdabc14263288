"""The pieces the sarama- and kafka-go-shaped facades share (facade.py)."""
from gregor.client.producer.facade import EngineFacade, ErrorList
from gregor.client.producer.sarama import ProducerErrors
from gregor.client.producer.writer import WriteErrors


class _Engine:
    def __init__(self):
        self.closed_with = []

    def close(self, timeout=None):
        self.closed_with.append(timeout)


class _Facade(EngineFacade):
    def __init__(self):
        self._engine = _Engine()


def test_closing_a_facade_closes_its_engine_and_the_context_manager_closes_it():
    f = _Facade()
    f.close(2.5)
    with f as same:
        assert same is f
    assert f._engine.closed_with == [2.5, None]


def test_error_lists_index_and_iterate_like_lists():
    e = ErrorList(iter(["x", None, "y"]))
    assert list(e) == ["x", None, "y"] and len(e) == 3 and e[2] == "y"
    assert isinstance(e, Exception)


def test_the_facades_error_lists_keep_their_own_behaviour():
    pe = ProducerErrors()
    assert not pe
    pe.append("boom")
    assert pe and list(pe) == ["boom"] and "1 messages failed" in str(pe)
    we = WriteErrors([None, ValueError("bad")])
    assert we.count == 1 and len(we) == 2 and "first: bad" in str(we)
