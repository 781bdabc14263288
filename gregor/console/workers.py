"""Where the console's blocking client calls run: a small thread pool whose threads each own
an AdminClient (one NetworkClient serves one request at a time, so threads never share one),
and the broker's health as those calls see it (the banner shown when the broker went away).

    result = await pool.admin(lambda admin: admin.describe_cluster(timeout))
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import time

from ..client.errors import KafkaConnectionError, KafkaTimeoutError
from .settings import ConsoleSettings

# Errors that mean "the broker cannot be reached", as opposed to a refused request.
UNREACHABLE = (KafkaConnectionError, KafkaTimeoutError, ConnectionError, TimeoutError, OSError)


class BrokerHealth:
    """The last outcome of talking to the broker: ok, or the error and since when."""

    def __init__(self):
        self.error: str | None = None
        self.down_since: float | None = None
        self.last_ok: float | None = None

    def ok(self) -> None:
        self.error = None
        self.down_since = None
        self.last_ok = time.time()

    def failed(self, err: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.time()
        self.error = str(err) or type(err).__name__

    def as_dict(self) -> dict:
        return {"ok": self.error is None, "error": self.error, "down_since": self.down_since,
                "last_ok": self.last_ok}


class ClientPool:
    def __init__(self, settings: ConsoleSettings, threads: int | None = None,
                 name: str = "gregor-console"):
        self.settings = settings
        self.health = BrokerHealth()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=threads or settings.worker_threads, thread_name_prefix=name)
        self._local = threading.local()
        self._admins: list = []
        self._lock = threading.Lock()
        self._closed = False

    def _thread_admin(self):
        admin = getattr(self._local, "admin", None)
        if admin is None:
            from ..client.admin import AdminClient
            admin = AdminClient(self.settings.client(
                **{"default.api.timeout.ms": int(self.settings.request_timeout_s * 1000)}))
            self._local.admin = admin
            with self._lock:
                self._admins.append(admin)
        return admin

    async def run(self, fn, *args, **kwargs):
        """fn(*args) on a worker thread; broker health follows its outcome."""
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._executor,
                                                functools.partial(fn, *args, **kwargs))
        except UNREACHABLE as e:
            self.health.failed(e)
            raise
        self.health.ok()
        return result

    async def admin(self, fn):
        """fn(admin) on a worker thread with that thread's AdminClient."""
        return await self.run(lambda: fn(self._thread_admin()))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            admins, self._admins = self._admins, []
        for a in admins:
            try:
                a.close()
            except Exception:
                pass
