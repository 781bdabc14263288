"""Fault injection as a test uses it: `broker.faults.push(...)`, `broker.hold(...)`,
`broker.intercept(...)`, `broker.requests(...)`, `broker.limit_versions(...)`.

The same methods work on an in-process `Broker`, a `BrokerProcess` and each broker of a
`Cluster`; what differs is the backend that carries the calls to the broker's Interceptor
(interceptor.py): a call on the broker's event loop in this process, or the control channel of
a child process (control.py). Arguments are checked here, in the test's thread, so a typo
fails at once with the list of valid names instead of a fault that never fires.
"""
from __future__ import annotations

from typing import Callable, Iterable

from . import names, rewrite


class Fault:
    """One injected fault. `fired` counts the requests (or errors) it has answered so far;
    `remove()` ends it early (also at the end of a `with` block)."""

    def __init__(self, backend, rule_id: int, description: str):
        self._backend = backend
        self.id = rule_id
        self.description = description

    def _info(self) -> dict:
        return self._backend.call("rule_info", self.id)

    @property
    def fired(self) -> int:
        return self._info()["fired"]

    @property
    def remaining(self) -> int | None:
        """Errors or requests still to come (None: until removed)."""
        return self._info()["remaining"]

    @property
    def done(self) -> bool:
        return self._info()["spent"]

    def remove(self) -> None:
        self._backend.call("remove_rule", self.id)

    def __enter__(self) -> "Fault":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"Fault({self.description})"


class Gate(Fault):
    """Holds matching requests until released:

        with broker.hold("JoinGroup") as gate:
            start_two_consumers()
            gate.wait_arrived(2)      # both JoinGroups are at the broker, neither handled
            gate.release(1)           # the oldest goes first ...
            gate.release()            # ... then every other one, and the gate opens

    Leaving the block releases whatever is still held."""

    def __init__(self, backend, rule_id: int, api: str):
        super().__init__(backend, rule_id, f"hold({api!r})")
        self.api = api

    @property
    def arrived(self) -> int:
        """Requests that reached the gate so far (released ones included)."""
        return self._backend.call("gate_counts", self.id)[0]

    @property
    def held(self) -> int:
        """Requests waiting at the gate now."""
        return self._backend.call("gate_counts", self.id)[1]

    def wait_arrived(self, n: int = 1, timeout: float = 30.0) -> "Gate":
        """Block until n requests have reached the gate; AssertionError after timeout."""
        if not self._backend.wait("gate_wait", self.id, n, timeout):
            raise AssertionError(f"{n} {self.api} request(s) did not reach the gate within "
                                 f"{timeout}s ({self.arrived} did)")
        return self

    def release(self, n: int | None = None) -> int:
        """Let the n oldest held requests go on (None: all, and open the gate for good)."""
        if n is not None and n < 1:
            raise ValueError(f"release(n) needs n >= 1 (or None for all), got {n}")
        return self._backend.call("gate_release", self.id, n)

    def __exit__(self, *exc) -> None:
        self.release()


class Faults:
    """Errors, delays, drops and closes for the next requests of an API."""

    def __init__(self, backend):
        self._backend = backend

    def push(self, api: int | str, errors: Iterable | str | int, *, topic: str | None = None,
             partition: int | None = None) -> Fault:
        """The next requests of `api` answer these errors, one per request, in order. With
        `topic` (and `partition`), only the partitions named get the error, one per request
        that names them; the request's other partitions are handled as usual. A faulted
        request or partition is not applied. "NONE" in the list lets one request through."""
        key = _served(self._backend, api)
        if isinstance(errors, (str, int)):
            errors = [errors]
        codes = [names.error_code(e) for e in errors]
        if not codes:
            raise ValueError("push() needs at least one error")
        if partition is not None and topic is None:
            raise ValueError("push(partition=...) needs topic= too")
        if partition is not None and (not isinstance(partition, int) or partition < 0):
            raise ValueError(f"partition must be an index >= 0, got {partition!r}")
        if topic is not None:
            if rewrite.table(key, 0) is None and key != rewrite.METADATA:
                raise ValueError(f"{names.api_name(key)} requests name no topics; push(topic=) "
                                 f"works on {', '.join(rewrite.scoped_apis())}. Without topic= "
                                 "the whole request gets the error")
            if partition is not None and not rewrite.partition_scoped(key):
                raise ValueError(f"{names.api_name(key)} works on whole topics; drop partition=")
        rule = self._backend.call("add_rule", key, "error", errors=codes, topic=topic,
                                  partition=partition)
        where = f", topic={topic!r}" if topic is not None else ""
        where += f", partition={partition}" if partition is not None else ""
        return Fault(self._backend, rule, f"push({names.api_name(key)!r}, "
                     f"{[names.error_name(c) for c in codes]}{where})")

    def delay(self, api: int | str, seconds: float, *, count: int | None = None) -> Fault:
        """Handle the next `count` requests (None: all, until removed) `seconds` late."""
        key = _served(self._backend, api)
        if not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError(f"delay needs seconds >= 0, got {seconds!r}")
        _check_count(count, allow_none=True)
        rule = self._backend.call("add_rule", key, "delay", seconds=float(seconds), count=count)
        return Fault(self._backend, rule, f"delay({names.api_name(key)!r}, {seconds})")

    def drop(self, api: int | str, *, count: int = 1) -> Fault:
        """Leave the next `count` requests unanswered and unhandled; their connection's later
        requests wait behind them, as behind a lost request (the client's request timeout
        is what ends it)."""
        key = _served(self._backend, api)
        _check_count(count)
        rule = self._backend.call("add_rule", key, "drop", count=count)
        return Fault(self._backend, rule, f"drop({names.api_name(key)!r})")

    def close(self, api: int | str, *, count: int = 1) -> Fault:
        """Close the connection of the next `count` requests instead of handling them."""
        key = _served(self._backend, api)
        _check_count(count)
        rule = self._backend.call("add_rule", key, "close", count=count)
        return Fault(self._backend, rule, f"close({names.api_name(key)!r})")

    def clear(self) -> None:
        """Remove every fault, gate, intercept and version limit."""
        self._backend.call("clear")


def _served(backend, api) -> int:
    """The key of `api`, which this broker must serve (else a fault on it could never fire)."""
    key = names.api_key(api)
    served = backend.call("served_versions")
    if key not in served:
        raise ValueError(f"this broker does not serve {names.api_name(key)}; it serves "
                         + ", ".join(sorted(names.api_name(k) for k in served)))
    return key


def _check_count(count, allow_none: bool = False) -> None:
    if count is None and allow_none:
        return
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"count must be an int >= 1{' or None' if allow_none else ''}, "
                         f"got {count!r}")


class FaultTarget:
    """The fault-injection methods of a broker; `_fault_backend()` says how to reach it."""

    def _fault_backend(self):
        raise NotImplementedError

    @property
    def faults(self) -> Faults:
        return Faults(self._fault_backend())

    def hold(self, api: int | str) -> Gate:
        """A gate holding every request of `api` until released (see Gate)."""
        backend = self._fault_backend()
        key = _served(backend, api)
        return Gate(backend, backend.call("add_rule", key, "hold"), names.api_name(key))

    def intercept(self, api: int | str, fn: Callable) -> Fault:
        """Call fn(request) for each request of `api` before it is handled. fn gets the
        decoded request (a dict in gregor's schema form, with .api, .version, .client_id,
        .connection) and returns a response dict, PASS (edits to the request are kept), DROP
        or CLOSE, or an awaitable of one. It runs on the broker's thread: keep it short."""
        if not callable(fn):
            raise TypeError(f"intercept() needs a function of the request, got {fn!r}")
        backend = self._fault_backend()
        key = _served(backend, api)
        rule = backend.call("add_rule", key, "intercept", fn=backend.callable(fn))
        return Fault(backend, rule, f"intercept({names.api_name(key)!r}, {fn!r})")

    def requests(self, api: int | str | None = None) -> list:
        """The requests received so far (oldest first), of one API or all: each a Request
        (dict of the body's fields, plus .api, .version, .client_id, .connection, .time)."""
        key = None if api is None else names.api_key(api)
        return self._fault_backend().call("requests", key)

    def clear_requests(self) -> None:
        self._fault_backend().call("clear_requests")

    def limit_versions(self, api: int | str, max_version: int | None) -> None:
        """Serve `api` only up to max_version, as an older Kafka would: ApiVersions says so
        and a request above it closes the connection. -1: not served at all; None: undo."""
        key = names.api_key(api)
        backend = self._fault_backend()
        if max_version is not None:
            served = backend.call("served_versions").get(key)
            if served is None:
                raise ValueError(f"this broker does not serve {names.api_name(key)}")
            lo, hi = served
            if not isinstance(max_version, int) or not (max_version == -1
                                                         or lo <= max_version <= hi):
                raise ValueError(f"this broker serves {names.api_name(key)} v{lo}-v{hi}; "
                                 f"limit_versions takes {lo}..{hi}, or -1 to not serve it, "
                                 f"or None to undo; got {max_version!r}")
        backend.call("set_limit", key, max_version)
