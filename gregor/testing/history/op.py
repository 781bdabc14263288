"""One operation of a recorded history, as Jepsen's Kafka workload records it.

An operation is written twice: once when a process invokes it (`type="invoke"`) and once when
it completes, with the same process and f:
- `ok`: it happened, and the value says what it did (offsets learned, records read);
- `fail`: it definitely did not happen (nothing it sent was written);
- `info`: unknown (a timeout, a lost connection, NOT_LEADER_OR_FOLLOWER...): it may have
  happened, partly or wholly, now or later.

`value` for send / poll / txn is a list of micro-operations:
- `("send", key, value)` on invoke, `("send", key, (offset, value))` on completion (offset None
  when unknown);
- `("poll",)` on invoke, `("poll", {key: [(offset, value), ...]})` on completion.
For assign / subscribe it is the list of keys (assign) or topics (subscribe). A key names one
topic-partition, as the string "topic/partition" (`key()` builds it, `split_key()` parses it).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
TYPES = (INVOKE, OK, FAIL, INFO)
COMPLETIONS = (OK, FAIL, INFO)

# The operations the workloads record; any other name is allowed (the checker ignores it).
SEND, POLL, TXN, ASSIGN, SUBSCRIBE, CRASH = "send", "poll", "txn", "assign", "subscribe", "crash"


def key(topic: str, partition: int) -> str:
    """The history's name for one topic-partition."""
    return f"{topic}/{int(partition)}"


def split_key(k: str) -> tuple[str, int]:
    topic, _, partition = k.rpartition("/")
    if not topic or not partition.lstrip("-").isdigit():
        raise ValueError(f"not a topic/partition key: {k!r}")
    return topic, int(partition)


def normalize_key(k: Any) -> str:
    """Accept "topic/partition", (topic, partition) or [topic, partition]."""
    if isinstance(k, str):
        split_key(k)
        return k
    if isinstance(k, (tuple, list)) and len(k) == 2:
        return key(k[0], k[1])
    raise ValueError(f"not a topic/partition key: {k!r}")


def send(k: Any, value: Any, offset: int | None = None, *, acked: bool = False) -> tuple:
    """A send micro-op: `("send", k, value)`, or with `acked` `("send", k, (offset, value))`."""
    k = normalize_key(k)
    return ("send", k, (offset, value)) if acked or offset is not None else ("send", k, value)


def poll(records: dict | None = None) -> tuple:
    """A poll micro-op: `("poll",)` to invoke, `("poll", {key: [(offset, value), ...]})` done."""
    if records is None:
        return ("poll",)
    return ("poll", {normalize_key(k): [(o, v) for o, v in rs] for k, rs in records.items()})


@dataclass(frozen=True)
class Op:
    index: int                   # position in the history (assigned when appended)
    time: int                    # monotonic nanoseconds
    process: int | str           # a logical process (one client, replaced after a crash), or
                                 # a name such as "nemesis" for events that are no client's
    type: str                    # invoke | ok | fail | info
    f: str                       # send | poll | txn | assign | subscribe | crash | ...
    value: Any = None
    error: str | None = None     # why fail / info: the client's error name
    meta: dict = field(default_factory=dict)  # e.g. {"rebalance_log": [...], "final": True}

    def __post_init__(self):
        if self.type not in TYPES:
            raise ValueError(f"op type must be one of {TYPES}, not {self.type!r}")

    @property
    def is_invoke(self) -> bool:
        return self.type == INVOKE

    @property
    def is_ok(self) -> bool:
        return self.type == OK

    def with_index(self, index: int) -> "Op":
        return replace(self, index=index)

    # --- micro-operations -------------------------------------------------------------
    def sends(self) -> list[tuple[str, int | None, Any]]:
        """(key, offset or None, value) for each send, in order; offset None on invoke."""
        out = []
        if self.f not in (SEND, TXN) or not isinstance(self.value, (list, tuple)):
            return out
        for mop in self.value:
            if mop and mop[0] == "send":
                _, k, v = mop
                if isinstance(v, (tuple, list)) and len(v) == 2:
                    out.append((k, v[0], v[1]))
                else:
                    out.append((k, None, v))
        return out

    def polls(self) -> list[dict[str, list[tuple[int, Any]]]]:
        """Each poll micro-op's records, in order: {key: [(offset, value), ...]}."""
        out = []
        if self.f not in (POLL, TXN) or not isinstance(self.value, (list, tuple)):
            return out
        for mop in self.value:
            if mop and mop[0] == "poll" and len(mop) > 1 and mop[1] is not None:
                out.append(mop[1])
        return out

    def reads(self) -> list[tuple[str, int, Any]]:
        """(key, offset, value) for every record polled, in order."""
        return [(k, o, v) for p in self.polls() for k, rs in p.items() for o, v in rs]

    # --- JSON -----------------------------------------------------------------------------
    def to_json(self) -> dict:
        d = {"index": self.index, "time": self.time, "process": self.process,
             "type": self.type, "f": self.f, "value": _jsonable(self.value)}
        if self.error is not None:
            d["error"] = self.error
        if self.meta:
            d["meta"] = _jsonable(self.meta)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Op":
        f = d["f"]
        value = d.get("value")
        if f in (SEND, POLL, TXN) and isinstance(value, list):
            value = [_mop_from_json(m) for m in value]
        return cls(index=d["index"], time=d["time"], process=d["process"], type=d["type"],
                   f=f, value=value, error=d.get("error"), meta=d.get("meta") or {})


def _mop_from_json(m):
    if m and m[0] == "send":
        _, k, v = m
        return ("send", k, tuple(v) if isinstance(v, list) else v)
    if m and m[0] == "poll":
        if len(m) < 2 or m[1] is None:
            return ("poll",)
        return ("poll", {k: [tuple(r) for r in rs] for k, rs in m[1].items()})
    return tuple(m)


def _jsonable(x):
    if isinstance(x, (tuple, list)):
        return [_jsonable(i) for i in x]
    if isinstance(x, dict):
        return {str(k) if not isinstance(k, (tuple, list)) else normalize_key(k): _jsonable(v)
                for k, v in x.items()}
    if isinstance(x, bytes):
        return x.decode("utf-8", "backslashreplace")
    return x
