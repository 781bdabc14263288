"""`gregor console`: a small web console for topics, messages, consumer groups (with lag over
time) and transactions, over the Kafka protocol only (it works against gregor and any Kafka
broker).

A Starlette app (app.py) renders HTML from Jinja2 templates plus one static JS file; every page
is also JSON under /api/. Blocking client calls run on a bounded thread pool (cluster_model.py),
never on the event loop; a lag sampler (lag.py) keeps lag history in ring buffers; message search
(search.py) runs google-re2 in a worker thread within a scan limit and a time budget.

    gregor console --bootstrap-server 127.0.0.1:9092            # http://127.0.0.1:8080
"""
from .settings import ConsoleSettings

__all__ = ["ConsoleSettings", "create_app"]


def create_app(settings: ConsoleSettings):
    from .app import create_app as _create
    return _create(settings)
