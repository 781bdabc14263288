"""What an intercept function sees and returns: a Request (the decoded body as a dict plus where
it came from) and the outcomes PASS, DROP and CLOSE."""
from __future__ import annotations


class _Outcome:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"gregor.testing.{self.name}"

    def __reduce__(self):
        return (_outcome, (self.name,))


PASS = _Outcome("PASS")      # an intercept lets the request through (possibly edited)
DROP = _Outcome("DROP")      # ... leaves it unanswered and not handled
CLOSE = _Outcome("CLOSE")    # ... closes the connection without handling it


def _outcome(name: str) -> _Outcome:
    return {"PASS": PASS, "DROP": DROP, "CLOSE": CLOSE}[name]


class Request(dict):
    """A request as the broker decoded it: the body's fields as dict items (gregor's schema
    form, snake_case names), plus where it came from. Records fields are read-only views of
    the received bytes."""

    __slots__ = ("api", "api_key", "version", "client_id", "connection", "correlation_id",
                 "time")

    def __init__(self, body: dict, api: str = "", api_key: int = -1, version: int = 0,
                 client_id: str | None = None, connection: str = "", correlation_id: int = 0,
                 time_: float = 0.0):
        super().__init__(body)
        self.api = api
        self.api_key = api_key
        self.version = version
        self.client_id = client_id
        self.connection = connection
        self.correlation_id = correlation_id
        self.time = time_

    @property
    def body(self) -> dict:
        return self

    def __repr__(self) -> str:
        return (f"Request({self.api} v{self.version} from {self.client_id!r} on "
                f"{self.connection}: {dict.__repr__(self)[:200]})")

    def __reduce__(self):
        return (_request, (_portable(dict(self)), self.api, self.api_key, self.version,
                           self.client_id, self.connection, self.correlation_id, self.time))


def _request(*args) -> Request:
    return Request(*args)


def _portable(value):
    """A copy without views of broker buffers (for the log and the control channel)."""
    if isinstance(value, dict):
        return {k: _portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v) for v in value]
    if isinstance(value, memoryview):
        return value.tobytes()
    return value
