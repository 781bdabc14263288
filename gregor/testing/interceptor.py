"""The broker side of fault injection: what `Connection._handle_frame` calls instead of the
handler once a test has installed it (`server.interceptor`).

Everything here runs on the broker's event loop. A test talks to it through gregor.testing's
Faults and Gate (faults.py), which call the methods under "commands" on the loop (in-process)
or through the control channel of a broker process (control.py).

Rules are kept per API key, in the order they were added, and each request runs through its
API's rules: an error rule answers the request (or the partitions it names) with its next
error; delay, hold and an intercept that returns an awaitable defer the request; drop leaves it
unanswered; close closes the connection. A request that was not answered by a rule is handled
as usual, minus its faulted partitions (rewrite.py).

Per connection, requests are handled in the order they arrived, as a Kafka broker handles one
request per connection at a time: while one is deferred, later ones on the same connection
wait behind it (a dropped one leaves its connection stuck, as a lost request would).
"""
from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import threading
import time
from collections import deque

from ..broker.server import NO_RESPONSE, CloseConnection
from . import rewrite
from .request import CLOSE, DROP, PASS, Request, _portable

log = logging.getLogger("gregor.testing")

API_VERSIONS = 18


class Rule:
    __slots__ = ("id", "api_key", "kind", "errors", "topic", "partition", "count", "seconds",
                 "fn", "fired", "gate", "spent")

    def __init__(self, rule_id: int, api_key: int, kind: str, *, errors=(), topic=None,
                 partition=None, count=None, seconds=0.0, fn=None):
        self.id = rule_id
        self.api_key = api_key
        self.kind = kind
        self.errors = deque(errors)
        self.topic = topic
        self.partition = partition
        self.count = count                  # None: every request until removed
        self.seconds = seconds
        self.fn = fn
        self.fired = 0
        self.gate = GateState() if kind == "hold" else None
        self.spent = False

    def take_error(self) -> int:
        code = self.errors.popleft()
        self.fired += 1
        if not self.errors:
            self.spent = True
        return code

    def take(self) -> None:
        self.fired += 1
        if self.count is not None:
            self.count -= 1
            if self.count <= 0:
                self.spent = True

    def covers(self, topic: str | None, partition: int | None) -> bool:
        """Whether this rule names that topic (None: the topic as a whole) or partition."""
        return topic == self.topic and (self.partition is None or partition == self.partition)

    def info(self) -> dict:
        return {"fired": self.fired, "spent": self.spent, "remaining":
                len(self.errors) if self.kind == "error" else self.count}


class GateState:
    """Requests held by hold(): futures resolved by release(), counted for wait_arrived()."""

    def __init__(self):
        self.open = False
        self.held: deque[asyncio.Future] = deque()
        self.arrived = 0
        self.cond = threading.Condition()

    def arrive(self, fut: asyncio.Future) -> None:
        self.held.append(fut)
        with self.cond:
            self.arrived += 1
            self.cond.notify_all()

    def release(self, n: int | None) -> int:
        if n is None:
            self.open = True
        released = 0
        while self.held and (n is None or released < n):
            fut = self.held.popleft()
            if not fut.done():
                fut.set_result(None)
            released += 1
        return released

    def wait(self, n: int, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.arrived >= n, timeout)


class _Chooser:
    """Partition-scoped error rules for one request: each rule gives at most one error per
    request, to every partition of the request it matches."""

    __slots__ = ("rules", "chosen")

    def __init__(self, rules):
        self.rules = rules
        self.chosen: dict[int, int] = {}

    def code(self, topic: str | None, partition: int | None) -> int:
        for r in self.rules:
            if not r.covers(topic, partition):
                continue
            if r.id not in self.chosen:
                if r.spent:
                    continue
                self.chosen[r.id] = r.take_error()
            code = self.chosen[r.id]
            if code:
                return code
        return 0


class Interceptor:
    def __init__(self, broker, *, request_log: int = 1000):
        self.broker = broker
        self.rules: dict[int, list[Rule]] = {}
        self.limits: dict[int, int] = {}
        self.log: deque | None = deque(maxlen=request_log) if request_log else None
        self._ids = itertools.count(1)
        self._by_id: dict[int, Rule] = {}
        self._waiting: dict = {}            # connection -> deque of requests behind a deferred one
        self._stuck: set[asyncio.Future] = set()     # dropped requests' futures
        self._deferring: set[asyncio.Future] = set()  # delays, holds and awaited intercepts
        self._server = None
        self._unsupported = None
        self.closed = False

    # -- installation ----------------------------------------------------------------------

    def install(self, server) -> None:
        self._server = server
        self._unsupported = server.unsupported_version_response
        if self._unsupported is not None:
            server.unsupported_version_response = lambda: self._limit_table(self._unsupported())
        server.interceptor = self

    def uninstall(self) -> None:
        if self._server is not None and self._server.interceptor is self:
            self._server.interceptor = None
            if self._unsupported is not None:
                self._server.unsupported_version_response = self._unsupported

    # -- commands (on the loop) ------------------------------------------------------------

    def add_rule(self, api_key: int, kind: str, **options) -> int:
        rule = Rule(next(self._ids), api_key, kind, **options)
        self.rules.setdefault(api_key, []).append(rule)
        self._by_id[rule.id] = rule
        return rule.id

    def remove_rule(self, rule_id: int) -> None:
        rule = self._by_id.get(rule_id)       # kept: its counts stay readable
        if rule is None:
            return
        rule.spent = True
        if rule.gate is not None:
            rule.gate.release(None)
        self._prune(rule.api_key)

    def rule_info(self, rule_id: int) -> dict:
        rule = self._by_id.get(rule_id)
        return rule.info() if rule is not None else {"fired": 0, "spent": True, "remaining": 0}

    def clear(self) -> None:
        for rule_id in list(self._by_id):
            self.remove_rule(rule_id)
        self._by_id.clear()
        self.limits.clear()

    def set_limit(self, api_key: int, max_version: int | None) -> None:
        if max_version is None:
            self.limits.pop(api_key, None)
        else:
            self.limits[api_key] = max_version

    def served_versions(self) -> dict[int, tuple[int, int]]:
        return {k: (h.min_version, h.max_version) for k, h in self._server.handlers.items()}

    def requests(self, api_key: int | None = None) -> list[Request]:
        if self.log is None:
            return []
        return [r for r in self.log if api_key is None or r.api_key == api_key]

    def clear_requests(self) -> None:
        if self.log is not None:
            self.log.clear()

    def gate_release(self, rule_id: int, n: int | None) -> int:
        rule = self._by_id.get(rule_id)
        if rule is None:
            return 0
        released = rule.gate.release(n)
        if n is None:
            self.remove_rule(rule_id)
        return released

    def gate_counts(self, rule_id: int) -> tuple[int, int]:
        rule = self._by_id.get(rule_id)
        return (rule.gate.arrived, len(rule.gate.held)) if rule is not None else (0, 0)

    # -- blocking commands (on the caller's thread) ----------------------------------------

    def gate_wait(self, rule_id: int, n: int, timeout: float) -> bool:
        rule = self._by_id.get(rule_id)
        return rule is not None and rule.gate.wait(n, timeout)

    def close(self) -> None:
        """Broker stopping: end held and dropped requests unanswered (their connections
        close), so shutdown, which drains every pending response, does not wait for them."""
        self.closed = True
        for rules in self.rules.values():
            for rule in rules:
                if rule.gate is not None:
                    rule.gate.open = True
                    while rule.gate.held:
                        rule.gate.held.popleft().cancel()
        for fut in [*self._stuck, *self._deferring]:
            if not fut.done():
                fut.cancel()
        self._stuck.clear()
        self.uninstall()

    # -- the hook ----------------------------------------------------------------------------

    def __call__(self, handler, ctx, body):
        if self.log is not None:
            self.log.append(Request(_portable(body), handler.api.name, handler.api.key,
                                    ctx.api_version, ctx.client_id, ctx.peer,
                                    ctx.correlation_id, time.time()))
        conn = ctx.connection
        if self._waiting:
            queue = self._waiting.get(conn)
            if queue is not None:
                fut = None if _no_answer(handler, body) else \
                    asyncio.get_running_loop().create_future()
                queue.append((handler, ctx, body, fut))
                return NO_RESPONSE if fut is None else fut
        return self._dispatch(handler, ctx, body)

    def _dispatch(self, handler, ctx, body):
        key = handler.api.key
        if key in self.limits and ctx.api_version > self.limits[key]:
            limit = self.limits[key]
            raise CloseConnection(
                f"{handler.api.name} v{ctx.api_version} was sent, but limit_versions() makes "
                + (f"this broker serve it up to v{limit}" if limit >= 0
                   else "this broker not serve it"))
        rules = self.rules.get(key)
        if rules:
            result = self._run(handler, ctx, body, tuple(rules), 0)
        else:
            result = handler.handle(ctx, body)
        if key == API_VERSIONS and self.limits:
            return _then(result, self._limit_table)
        return result

    def _run(self, handler, ctx, body, rules, start: int):
        scoped = []
        for i in range(start, len(rules)):
            rule = rules[i]
            if rule.spent:
                continue
            kind = rule.kind
            if kind == "error":
                if rule.topic is not None:
                    scoped.append(rule)
                    continue
                code = rule.take_error()
                self._spent(rule)
                if code:
                    return self._whole_error(handler, ctx, body, code)
            elif kind == "delay":
                rule.take()
                self._spent(rule)
                return self._defer(handler, ctx, body, asyncio.sleep(rule.seconds),
                                   lambda _r, i=i: self._run(handler, ctx, body, rules, i + 1))
            elif kind == "drop":
                rule.take()
                self._spent(rule)
                return self._drop(handler, ctx, body)
            elif kind == "close":
                rule.take()
                self._spent(rule)
                raise CloseConnection(f"closed by a fault: faults.close({handler.api.name!r})")
            elif kind == "hold":
                if rule.gate.open:
                    continue
                rule.fired += 1
                fut = asyncio.get_running_loop().create_future()
                rule.gate.arrive(fut)
                return self._defer(handler, ctx, body, fut,
                                   lambda _r, i=i: self._run(handler, ctx, body, rules, i + 1))
            elif kind == "intercept":
                request = body if isinstance(body, Request) else Request(
                    body, handler.api.name, handler.api.key, ctx.api_version, ctx.client_id,
                    ctx.peer, ctx.correlation_id, time.time())
                rule.fired += 1
                out = rule.fn(request)
                if inspect.isawaitable(out):
                    return self._defer(handler, ctx, body, out,
                                       lambda res, i=i, request=request: self._outcome(
                                           res, handler, ctx, request, rules, i))
                if out is PASS:
                    body = request
                    continue
                return self._outcome(out, handler, ctx, request, rules, i)
        return self._handle(handler, ctx, body, scoped)

    def _outcome(self, out, handler, ctx, request, rules, i):
        if out is PASS:
            return self._run(handler, ctx, request, rules, i + 1)
        if out is DROP:
            return self._drop(handler, ctx, request)
        if out is CLOSE:
            raise CloseConnection(f"closed by intercept({handler.api.name!r})")
        if isinstance(out, dict):
            return out
        raise TypeError(f"an intercept function for {handler.api.name} returned {out!r}; it "
                        "must return a response dict, PASS, DROP or CLOSE (or an awaitable "
                        "of one)")

    def _handle(self, handler, ctx, body, scoped):
        if not scoped:
            return handler.handle(ctx, body)
        key = handler.api.key
        chooser = _Chooser(scoped)
        if key == rewrite.METADATA:
            result = handler.handle(ctx, body)
            return _then(result, lambda resp: self._after(
                rewrite.metadata_faults(resp, chooser.code), scoped))
        t = rewrite.table(key, ctx.api_version)
        faulted = {}
        for k, name, p in rewrite.entries(t, body, self._topic_name):
            code = chooser.code(name, p)
            if code:
                faulted[k] = code
        for rule in scoped:
            self._spent(rule)
        if not faulted:
            return handler.handle(ctx, body)
        kept, left = rewrite.without(t, body, faulted)
        if key == rewrite.FETCH:
            kept["max_wait_ms"] = 0     # errors are news: answer at once, as Kafka does
        if left:
            result = handler.handle(ctx, kept)
        else:
            result = NO_RESPONSE if _no_answer(handler, body) else {}
        if result is NO_RESPONSE:
            return result
        return _then(result, lambda resp: rewrite.merge(t, resp, faulted))

    def _after(self, response, rules):
        for rule in rules:
            self._spent(rule)
        return response

    def _whole_error(self, handler, ctx, body, code):
        key = handler.api.key
        if _no_answer(handler, body):
            return NO_RESPONSE
        if key == rewrite.METADATA:
            return _then(handler.handle(ctx, body),
                         lambda resp: rewrite.metadata_faults(resp, lambda t, p: code))
        return rewrite.whole_error(key, ctx.api_version, body, code)

    def _topic_name(self, key) -> str | None:
        if isinstance(key, (bytes, bytearray)) and len(key) == 16:     # a topic id
            wanted = bytes(key).hex()
            for t in self.broker.store.live():
                if t.topic_id == wanted:
                    return t.name
            return None
        return key

    def _limit_table(self, response):
        if not isinstance(response, dict) or not self.limits:
            return response
        table = []
        for entry in response.get("api_keys") or ():
            limit = self.limits.get(entry["api_key"])
            if limit is None:
                table.append(entry)
            elif limit >= entry["min_version"]:
                table.append({**entry, "max_version": min(limit, entry["max_version"])})
        return {**response, "api_keys": table}

    def _spent(self, rule: Rule) -> None:
        if rule.spent:
            self._prune(rule.api_key)

    def _prune(self, api_key: int) -> None:
        rules = [r for r in self.rules.get(api_key, ()) if not r.spent]
        if rules:
            self.rules[api_key] = rules
        else:
            self.rules.pop(api_key, None)

    # -- deferring, in order per connection --------------------------------------------------

    def _drop(self, handler, ctx, body):
        """No answer and not handled; the connection's later requests wait behind it."""
        for conn in [c for c in self._waiting if c.closed]:     # gone: forget them
            for _h, _c, _b, fut in self._waiting.pop(conn):
                if fut is not None:
                    fut.cancel()
        fut = asyncio.get_running_loop().create_future()
        self._stuck.add(fut)
        fut.add_done_callback(self._stuck.discard)
        self._waiting.setdefault(ctx.connection, deque())
        return NO_RESPONSE if _no_answer(handler, body) else fut

    def _defer(self, handler, ctx, body, waitable, then):
        """Answer once `waitable` is done: then(its result) gives the answer (a response,
        a future of one, NO_RESPONSE, or raises CloseConnection)."""
        loop = asyncio.get_running_loop()
        conn = ctx.connection
        self._waiting.setdefault(conn, deque())
        out = None if _no_answer(handler, body) else loop.create_future()
        task = asyncio.ensure_future(waitable)
        self._deferring.add(task)
        task.add_done_callback(self._deferring.discard)

        def done(t):
            queue = self._waiting.pop(conn, None)
            if t.cancelled():
                _settle(out, conn, None, cancelled=True)
            elif t.exception() is not None:
                log.error("a deferred %s failed: %r", handler.api.name, t.exception())
                _settle(out, conn, None, error=t.exception())
            else:
                _settle(out, conn, lambda: then(t.result()))
            self._resume(conn, queue)
        task.add_done_callback(done)
        return NO_RESPONSE if out is None else out

    def _resume(self, conn, queue) -> None:
        while queue:
            if conn in self._waiting:          # the last one was deferred again
                self._waiting[conn].extend(queue)
                return
            handler, ctx, body, fut = queue.popleft()
            if conn.closed or self.closed:
                if fut is not None:
                    fut.cancel()
                continue
            _settle(fut, conn, lambda: self._dispatch(handler, ctx, body))


def _no_answer(handler, body) -> bool:
    return handler.api.key == rewrite.PRODUCE and body.get("acks") == 0


def _then(result, fn):
    """fn(response) now, or once the handler's future resolves."""
    if isinstance(result, asyncio.Future):
        out = result.get_loop().create_future()

        def done(f):
            if out.done():
                return
            if f.cancelled():
                out.cancel()
            elif f.exception() is not None:
                out.set_exception(f.exception())
            else:
                try:
                    out.set_result(fn(f.result()))
                except Exception as e:          # noqa: BLE001 - the server logs and closes
                    out.set_exception(e)
        result.add_done_callback(done)
        return out
    if isinstance(result, dict):
        return fn(result)
    return result


def _settle(out, conn, produce, *, cancelled=False, error=None) -> None:
    """Resolve a deferred request's future `out` with what produce() returns."""
    if cancelled or error is not None:
        if out is not None and not out.done():
            out.cancel() if cancelled else out.set_exception(error)
        return
    try:
        result = produce()
    except CloseConnection as e:
        if out is not None and not out.done():
            out.cancel()
        conn.close(str(e))
        return
    except Exception:                      # noqa: BLE001 - as the server would
        log.exception("handling a deferred request failed; closing the connection")
        if out is not None and not out.done():
            out.cancel()
        conn.close("")
        return
    if out is None or out.done():
        return
    if result is NO_RESPONSE:
        out.cancel()
        conn.close("a request deferred by a test fault got no response")
    elif isinstance(result, asyncio.Future):
        def copy(f):
            if out.done():
                return
            if f.cancelled():
                out.cancel()
            elif f.exception() is not None:
                out.set_exception(f.exception())
            else:
                out.set_result(f.result())
        result.add_done_callback(copy)
    else:
        out.set_result(result)
