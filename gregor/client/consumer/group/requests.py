"""The words the membership state machine (membership.py), its coordinator calls
(offset_ops.py) and the edge that does the I/O (group_client.py) share: where a request goes,
the member's states, which errors retry, the settings and the request / op / event records."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ....protocol.errors import ErrorCode as E, KafkaError

COORDINATOR = "coordinator"     # Request.dest: the group's coordinator
ANY = "any"                     # Request.dest: any broker (least loaded)

# Where the member is, as Java's MemberState plus the two waits of the eager protocol.
UNJOINED, REVOKING, JOINING, ASSIGNING, SYNCING, STABLE = (
    "unjoined", "revoking", "joining", "assigning", "syncing", "stable")

_FIND_AGAIN = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE}
_RETRY = {E.COORDINATOR_LOAD_IN_PROGRESS, E.REQUEST_TIMED_OUT, E.UNSTABLE_OFFSET_COMMIT,
          E.NETWORK_EXCEPTION}
# JoinGroup answers no retry can fix: the application must hear of them.
_FATAL_JOIN = {E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT,
               E.GROUP_AUTHORIZATION_FAILED, E.GROUP_MAX_SIZE_REACHED, E.FENCED_INSTANCE_ID,
               E.INVALID_GROUP_ID, E.UNSUPPORTED_VERSION}


class CommitFailedError(KafkaError):
    """The commit cannot succeed: this member is no longer in the generation that owns the
    partitions (it was kicked out or a rebalance moved them)."""
    code = -1
    name = "COMMIT_FAILED"
    retriable = False
    message = ("the group rebalanced and this member no longer owns these partitions; poll() "
               "to rejoin, then commit what you consume afterwards")


@dataclass
class GroupSettings:
    group_id: str
    strategies: list[str]                       # assignor names, preferred first
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000          # max.poll.interval.ms, as Java sends it
    heartbeat_interval_ms: int = 3000
    instance_id: str | None = None
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    metadata_max_age_ms: int = 300000


@dataclass
class Request:
    api: str
    body: dict
    dest: str                                   # COORDINATOR or ANY
    timeout_ms: int
    kind: str                                   # which handler takes the answer
    ctx: Any = None                             # state the handler checks (epoch, op)


@dataclass
class Op:
    """A coordinator call of the application (commit, committed offsets). `done(result,
    error)` is called once."""
    kind: str                                   # "commit" or "fetch"
    payload: Any
    done: Callable[[Any, Exception | None], None]
    deadline_ms: float
    not_before_ms: float = 0


@dataclass
class Event:
    kind: str                                   # "revoke", "lost", "assign", "error"
    partitions: list = field(default_factory=list)
    error: Exception | None = None
