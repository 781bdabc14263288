"""`SchemaRegistry`: the store, the election, the app and the HTTP server put together.

    registry = SchemaRegistry({"bootstrap.servers": "127.0.0.1:9092"}, port=0)
    await registry.start()          # on any event loop (the broker's, when embedded)
    registry.url                    # http://127.0.0.1:PORT
    await registry.stop()

`RegistryThread` runs one on a loop of its own (the CLI, tests). The registry is a Kafka
client of the cluster like any other: it works against gregor or Apache Kafka.
"""
from __future__ import annotations

import asyncio
import logging
import threading

from .app import RegistryApp
from .http_server import DEFAULT_MAX_BODY, serve
from .service import RegistryService
from .store import TOPIC, KafkaStore

log = logging.getLogger(__name__)


class _AlwaysLeader:
    def is_leader(self) -> bool:
        return True

    def leader_url(self):
        return None


class SchemaRegistry:
    def __init__(self, client_config: dict, host: str = "127.0.0.1", port: int = 0, *,
                 ssl_context=None, users: dict | None = None, max_body: int = DEFAULT_MAX_BODY,
                 topic: str = TOPIC, replication_factor: int | None = None,
                 leader_eligible: bool = True, election: bool = True,
                 advertised_url: str | None = None, election_settings: dict | None = None):
        self.client_config = dict(client_config)
        self.host, self.port = host, port
        self.ssl_context = ssl_context
        self.users = users
        self.max_body = max_body
        self.store = KafkaStore(self.client_config, topic=topic,
                                replication_factor=replication_factor)
        self.service = RegistryService(self.store.state, self.store.write, self.store.cond)
        self.leader_eligible = leader_eligible
        self.use_election = election
        self.advertised_url = advertised_url
        # LeaderElection's session_timeout_ms / heartbeat_interval_ms (Confluent's defaults)
        self.election_settings = dict(election_settings or {})
        self.election = None
        self._server = None
        self.url: str | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"

    async def start(self) -> "SchemaRegistry":
        await asyncio.to_thread(self.store.start)
        self._server = await serve(self._handle, self.host, self.port,
                                   ssl_context=self.ssl_context, max_body=self.max_body,
                                   users=self.users)
        host, port = self._server.sockets[0].getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"{self.scheme}://{shown}:{port}"
        leadership, forwarder = _AlwaysLeader(), None
        if self.use_election:
            from .election import LeaderElection
            from .forwarding import forward
            self.election = LeaderElection(
                self.client_config, self.advertised_url or self.url,
                eligible=self.leader_eligible, on_leader=self.store.sync,
                **self.election_settings)
            await asyncio.to_thread(self.election.start)
            leadership, forwarder = self.election, forward
        self.app = RegistryApp(self.service, leadership, forwarder)
        return self

    async def _handle(self, req):
        return await self.app(req)

    async def stop(self) -> None:
        """Stop serving, leave the group, close the clients; each step even if one fails."""
        if self._server is not None:
            self._server.close()
            try:
                await asyncio.wait_for(self._server.wait_closed(), 5)
            except Exception:
                log.debug("closing the HTTP server", exc_info=True)
        for step in ([self.election.stop] if self.election is not None else []) + \
                [self.store.close]:
            try:
                await asyncio.to_thread(step)
            except Exception:
                log.warning("stopping the schema registry", exc_info=True)


class RegistryThread:
    """A SchemaRegistry on its own event loop in a daemon thread."""

    def __init__(self, client_config: dict, **kwargs):
        self.registry = SchemaRegistry(client_config, **kwargs)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="schema-registry-loop")

    @property
    def url(self) -> str:
        return self.registry.url

    def start(self, timeout: float = 60.0) -> "RegistryThread":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.registry.start(), self.loop).result(timeout)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self.registry.stop(), self.loop).result(timeout)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
            if not self._thread.is_alive():
                self.loop.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
