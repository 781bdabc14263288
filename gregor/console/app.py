"""The console's ASGI app: routes (each page as HTML and as JSON under /api/), static files,
the guards (security.py), and the services the routes share, started and stopped with the app
(lifespan): the client thread pools, the lag sampler and a producer for produce/re-produce.
"""
from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..client.errors import ClientError
from ..protocol.errors import KafkaError
from . import routes_cluster, routes_groups, routes_messages, routes_schemas
from .cluster_model import ClusterModel
from .groups_model import GroupsModel
from .lag import LagSampler
from .render import error_page, make_env
from .security import SecurityMiddleware
from .settings import ConsoleSettings
from .transactions_model import TransactionsModel
from .workers import UNREACHABLE, ClientPool

STATIC = Path(__file__).parent / "static"


class Console:
    """What the routes reach through request.app.state.console."""

    def __init__(self, settings: ConsoleSettings, *, sample: bool = True):
        self.settings = settings
        self.env = make_env()
        self.pool = ClientPool(settings)
        # Searches get threads of their own, so a long scan never queues the pages' calls.
        self.search_pool = ClientPool(settings, threads=settings.max_searches,
                                      name="gregor-console-search")
        self.search_pool.health = self.pool.health
        self.sampler = LagSampler(self.pool, settings.lag_interval_s, settings.lag_history)
        self.cluster = ClusterModel(self.pool)
        self.groups = GroupsModel(self.pool, self.sampler)
        self.transactions = TransactionsModel(self.pool)
        self.search_slots = asyncio.Semaphore(settings.max_searches)
        self.tail_slots = asyncio.Semaphore(settings.max_tails)
        self._sample = sample
        self.registry = self.decoder = None
        if settings.schema_registry_url:
            from ..schema_registry import SchemaRegistryClient
            from .decode import RecordDecoder
            self.registry = SchemaRegistryClient(settings.registry())
            self.decoder = RecordDecoder(self.registry)
        self._producer = None
        self._producer_lock = threading.Lock()

    async def start(self) -> None:
        if self._sample:
            self.sampler.start()

    async def stop(self) -> None:
        await self.sampler.stop()
        if self._producer is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._producer.close, 5.0)
        self.pool.close()
        self.search_pool.close()

    def _get_producer(self):
        with self._producer_lock:
            if self._producer is None:
                from ..client.producer import Producer
                self._producer = Producer(self.settings.client(
                    **{"acks": "all", "linger.ms": 0,
                       "delivery.timeout.ms": int(self.settings.request_timeout_s * 2000),
                       "request.timeout.ms": int(self.settings.request_timeout_s * 1000)}))
            return self._producer

    async def produce(self, topic: str, key, value, headers, partition):
        timeout = self.settings.request_timeout_s * 2

        def send():
            p = self._get_producer()
            return p.send(topic, value=value, key=key, headers=headers or None,
                          partition=partition).get(timeout)
        return await self.pool.run(send)


def _routes() -> list:
    out = []
    for module in (routes_cluster, routes_messages, routes_groups, routes_schemas):
        for path, endpoint, methods in module.ROUTES:
            out.append(Route(path, endpoint, methods=methods))
            out.append(Route("/api/cluster" if path == "/" else "/api" + path, endpoint,
                             methods=methods))
    out.append(Route("/api", routes_cluster.cluster, methods=["GET"]))
    for path, endpoint, methods in routes_cluster.PLAIN_ROUTES:
        out.append(Route(path, endpoint, methods=methods))
    out.append(Mount("/static", StaticFiles(directory=str(STATIC)), name="static"))
    return out


def create_app(settings: ConsoleSettings, *, allowed_hosts: set[str] | None = None,
               sample: bool = True) -> Starlette:
    console = Console(settings, sample=sample)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await console.start()
        try:
            yield
        finally:
            await console.stop()

    handlers = {exc: error_page for exc in (KafkaError, ClientError, HTTPException,
                                            ValueError, *UNREACHABLE)}
    app = Starlette(routes=_routes(), lifespan=lifespan, exception_handlers=handlers)
    app.state.console = console
    app.add_middleware(SecurityMiddleware, settings=settings, allowed_hosts=allowed_hosts)
    return app
