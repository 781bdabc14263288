"""`Broker`: the real gregor broker inside the test's own process, on its own event loop in a
daemon thread.

    with Broker({"num.partitions": 3}) as broker:
        broker.create_topic("orders", partitions=3)
        Producer({"bootstrap.servers": broker.bootstrap_servers})

The loop is the broker's alone (uvloop when installed, as `gregor broker` uses), so it never
meets pytest-asyncio's loop or the test's own; clients of every kind (confluent-kafka,
kafka-python, aiokafka, kcat, gregor's own) reach it over a real socket on 127.0.0.1. Data goes
to a temporary directory removed at stop() unless `data_dir` is given. Nothing outlives stop():
the loop's thread, its executor, every file and socket are closed.

Settings are Kafka's names (or Python spellings); a few defaults differ from a production
broker so tests run fast (TEST_DEFAULTS, each overridable): an unknown name is an error at once.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import difflib
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from .faults import FaultTarget

# Defaults that differ from a production broker's, for tests (override any of them):
TEST_DEFAULTS: dict[str, Any] = {
    # a free port on loopback, never a fixed 9092 that another test run may hold
    "listeners": "PLAINTEXT://127.0.0.1:0",
    # Kafka waits 3 s for more members before the first rebalance; its own test configs set 0
    "group.initial.rebalance.delay.ms": 0,
    # one partition each instead of 50: created on first use, 50 are ~150 files per test
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.num.partitions": 1,
    "share.coordinator.state.topic.num.partitions": 1,
    # the cleaner runs as threads of this process rather than one more process per broker
    "gregor.log.cleaner.process": False,
}


def check_settings(settings: dict | None) -> dict[str, Any]:
    """Settings by Kafka's names; an unknown one is a ValueError naming the close ones."""
    from ..broker.config import BROKER_SETTINGS, normalize_name
    out = {}
    for name, value in (settings or {}).items():
        if not isinstance(name, str):
            raise TypeError(f"broker settings are named by strings, got {name!r}")
        kafka_name = normalize_name(name)
        if kafka_name not in BROKER_SETTINGS:
            close = difflib.get_close_matches(kafka_name, list(BROKER_SETTINGS), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else \
                " (gregor.broker.config.BROKER_SETTINGS lists them)"
            raise ValueError(f"{name!r} is not a broker setting gregor knows{hint}")
        out[kafka_name] = value
    return out


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class LoopBackend:
    """Carries fault-injection calls to an Interceptor on a loop in this process."""

    def __init__(self, runner: "Broker"):
        self.runner = runner

    def call(self, method: str, *args, **kwargs):
        interceptor = self.runner._interceptor
        if interceptor is None:
            raise RuntimeError("the broker is not running; start() it first")
        return self.runner.run_on_loop(lambda _b: getattr(interceptor, method)(*args, **kwargs))

    def wait(self, method: str, *args):
        interceptor = self.runner._interceptor
        if interceptor is None:
            raise RuntimeError("the broker is not running; start() it first")
        return getattr(interceptor, method)(*args)

    def callable(self, fn):
        return fn


class Broker(FaultTarget):
    def __init__(self, config: dict | None = None, data_dir: str | Path | None = None, *,
                 clock: str | Any | None = None, request_log: int = 1000,
                 proxy: bool = False, schema_registry: bool = False):
        """config: broker settings by Kafka's names. clock: None (real time), "manual" or a
        ManualClock to drive the coordinators' timers (broker.clock). request_log: how many
        recent requests requests() keeps (0: none). proxy: clients reach the broker through
        a TcpProxy (broker.proxy) that the broker advertises, so its faults hit them.
        schema_registry: serve the Schema Registry in the broker's process too
        (`schema_registry_url`; as schema.registry.listeners=http://127.0.0.1:0)."""
        self.settings = {**TEST_DEFAULTS, **check_settings(config)}
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self.data_dir: Path | None = self._given_dir
        from .clock import make_clock
        self.clock = make_clock(clock)
        self.request_log = request_log
        self.proxy = None
        self._want_proxy = proxy
        self.host = "127.0.0.1"
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._broker = None
        self._interceptor = None
        self._tmp: str | None = None
        self._backend = LoopBackend(self)
        if schema_registry:
            self.settings.setdefault("schema.registry.listeners", "http://127.0.0.1:0")
        self._registry = None
        self._registry_port = 0

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._broker is not None

    @property
    def bootstrap_servers(self) -> str:
        """"127.0.0.1:PORT", what clients are given (the proxy's address when proxied)."""
        if self.proxy is not None:
            return f"127.0.0.1:{self.proxy.port}"
        return f"{self.host}:{self.port}"

    bootstrap = bootstrap_servers

    @property
    def schema_registry_url(self) -> str:
        """http://127.0.0.1:PORT of the embedded Schema Registry (schema_registry=True)."""
        if self._registry is None:
            raise RuntimeError("no schema registry: start the Broker with schema_registry=True")
        return self._registry.url

    @property
    def broker(self):
        """The gregor.broker.broker.Broker itself (touch it only through run_on_loop())."""
        return self._broker

    def start(self, timeout: float = 30.0) -> "Broker":
        if self.running:
            raise RuntimeError("this broker is already running; stop() it first")
        from ..broker.config import BrokerConfig
        if self._given_dir is None and self.data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="gregor-test-")
            self.data_dir = Path(self._tmp)
        settings = dict(self.settings, **{"log.dirs": str(self.data_dir)})
        if self.port:                      # a restart keeps the port clients know
            settings["listeners"] = _with_port(settings["listeners"], self.port)
        if self._want_proxy:
            from .proxy import TcpProxy
            if self.proxy is None:
                self.proxy = TcpProxy(None)
            self.proxy.broker = self
            settings.setdefault("advertised.listeners",
                                f"PLAINTEXT://127.0.0.1:{self.proxy.port}")
        config = BrokerConfig(settings)
        self._loop = loop = new_event_loop()
        self._thread = threading.Thread(target=_serve_forever, args=(loop,), daemon=True,
                                        name="gregor-test-broker")
        self._thread.start()
        try:
            host, port = asyncio.run_coroutine_threadsafe(self._start(config), loop) \
                .result(timeout)
        except BaseException as e:
            self._teardown()
            if isinstance(e, concurrent.futures.TimeoutError):
                raise RuntimeError(f"the broker did not start within {timeout}s") from None
            raise
        self.host, self.port = host, port
        if self.proxy is not None:
            self.proxy.target = (host, port)
        return self

    async def _start(self, config) -> tuple[str, int]:
        from ..broker.broker import Broker as GregorBroker
        from .interceptor import Interceptor
        broker = GregorBroker(config)
        if self.clock is not None:
            self.clock.attach(asyncio.get_running_loop())
            broker.clock = self.clock
        host, port = await broker.start()
        self._interceptor = Interceptor(broker, request_log=self.request_log)
        self._interceptor.install(broker.server)
        self._broker = broker
        if config.get("schema.registry.listeners"):
            await self._start_registry(config, host, port)
        return host, port

    async def _start_registry(self, config, host, port) -> None:
        from ..registry.embedded import registry_for
        registry = registry_for(config, host, port)
        if self._registry_port:            # a restart keeps the URL clients know
            registry.port = self._registry_port
        await registry.start()
        self._registry = registry
        self._registry_port = int(registry.url.rsplit(":", 1)[1])

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the broker down cleanly (logs flushed and closed), end its thread, and remove
        its data unless data_dir was given."""
        if self._loop is None:
            return
        try:
            if self._broker is not None:
                asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout)
        finally:
            self._teardown()

    async def _stop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._interceptor is not None:
            self._interceptor.close()
        try:
            if self._registry is not None:
                registry, self._registry = self._registry, None
                await registry.stop()
            await self._broker.shutdown()
        finally:
            if self.clock is not None:
                self.clock.detach()
            me = asyncio.current_task()
            others = [t for t in asyncio.all_tasks() if t is not me]
            for t in others:
                t.cancel()
            await asyncio.gather(*others, return_exceptions=True)
            await loop.shutdown_asyncgens()
            await loop.shutdown_default_executor()

    def _teardown(self) -> None:
        loop, thread = self._loop, self._thread
        self._broker = self._interceptor = None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(30)
            loop.close()
        self._loop = self._thread = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
            self.data_dir = None
            self.port = 0                  # a fresh directory is a fresh broker
            self._registry_port = 0

    def restart(self, timeout: float = 30.0) -> "Broker":
        """Stop cleanly and start again on the same data and port (data_dir must be given,
        or the temporary one is kept across the restart)."""
        tmp, self._tmp = self._tmp, None
        try:
            self.stop(timeout)
        finally:
            self._tmp = tmp
        return self.start(timeout)

    def close(self) -> None:
        """stop(), and close the proxy if there is one."""
        self.stop()
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None

    def __enter__(self) -> "Broker":
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"on {self.bootstrap_servers}" if self.running else "stopped"
        return f"gregor.testing.Broker({state})"

    # -- working with the broker -----------------------------------------------------------

    def run_on_loop(self, fn: Callable, timeout: float = 30.0):
        """fn(broker) on the broker's loop (where its state may be touched); its result."""
        loop = self._loop
        if loop is None or self._broker is None:
            raise RuntimeError("the broker is not running; start() it first")
        if threading.current_thread() is self._thread:
            return fn(self._broker)
        done: concurrent.futures.Future = concurrent.futures.Future()

        def run():
            try:
                done.set_result(fn(self._broker))
            except BaseException as e:   # noqa: BLE001 - handed to the caller
                done.set_exception(e)
        loop.call_soon_threadsafe(run)
        return done.result(timeout)

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None) -> str:
        """Create a topic (as CreateTopics would: the same checks, the same errors)."""
        from ..broker.config import config_to_string
        configs = {k: config_to_string(v) for k, v in (config or {}).items()}

        def create(b):
            count, clean = b.check_new_topic(name, partitions, 1, configs)
            b.create_topic(name, count, clean)
        self.run_on_loop(create)
        return name

    def delete_topic(self, name: str) -> None:
        self.run_on_loop(lambda b: b.delete_topic(name))

    def topics(self) -> list[str]:
        return self.run_on_loop(lambda b: sorted(t.name for t in b.store.live()))

    def _fault_backend(self):
        return self._backend


def _serve_forever(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        asyncio.set_event_loop(None)


def _with_port(listeners: str, port: int) -> str:
    """The first listener of `listeners` on `port` (a restart keeps the port)."""
    from ..broker.listeners import with_first_listener_at
    first = listeners.split(",")[0]
    host = first.split("://", 1)[-1].rsplit(":", 1)[0] or "127.0.0.1"
    return with_first_listener_at(listeners, f"{host}:{port}")
