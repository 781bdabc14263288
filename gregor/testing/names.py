"""Kafka's API and error names as the toolkit accepts them, with errors that list what is valid.

An API is named as Kafka names it ("Produce", "JoinGroup"; any case) or by its key (0, 11);
an error by Kafka's name ("NOT_LEADER_OR_FOLLOWER"; any case), its code (6) or an ErrorCode.
"""
from __future__ import annotations

import difflib

from ..protocol import messages
from ..protocol.errors import ErrorCode


def api_key(api: int | str) -> int:
    """The key of an API given by name or key; a clear ValueError otherwise."""
    if isinstance(api, bool):
        raise TypeError(f"an API is named by its Kafka name or key, not {api!r}")
    if isinstance(api, int):
        if api in messages.APIS:
            return api
        raise ValueError(f"unknown API key {api}; valid keys: "
                         + ", ".join(f"{k} ({a.name})" for k, a in sorted(messages.APIS.items())))
    if not isinstance(api, str):
        raise TypeError(f"an API is named by its Kafka name (e.g. 'Produce') or key, "
                        f"not {type(api).__name__}")
    found = messages.BY_NAME.get(api) or _loose().get(_squash(api))
    if found is None:
        close = difflib.get_close_matches(api, list(messages.BY_NAME), n=3)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise ValueError(f"unknown API {api!r}; {hint}valid names: "
                         + ", ".join(sorted(messages.BY_NAME)))
    return found.key


def _squash(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace(" ", "")


def _loose() -> dict:
    """"join_group", "JOINGROUP" and "JoinGroup" all name JoinGroup."""
    return {_squash(name): a for name, a in messages.BY_NAME.items()}


def api_name(key: int) -> str:
    return messages.APIS[key].name


def error_code(error: int | str) -> int:
    """The code of an error given by Kafka's name, its code or an ErrorCode member."""
    if isinstance(error, bool):
        raise TypeError(f"an error is named by its Kafka name or code, not {error!r}")
    if isinstance(error, int):
        try:
            return int(ErrorCode(error))
        except ValueError:
            raise ValueError(f"unknown error code {error}; valid codes run from "
                             f"{min(ErrorCode)} to {max(ErrorCode)} "
                             "(gregor.protocol.errors.ErrorCode lists them)") from None
    if not isinstance(error, str):
        raise TypeError(f"an error is named by its Kafka name (e.g. 'NOT_LEADER_OR_FOLLOWER') "
                        f"or code, not {type(error).__name__}")
    name = error.strip().upper()
    if name in ErrorCode.__members__:
        return int(ErrorCode[name])
    names = list(ErrorCode.__members__)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    if close:           # a guess is enough; ~130 names after it hid it
        raise ValueError(f"unknown error {error!r}; did you mean {' or '.join(close)}? "
                         "(gregor.protocol.errors.ErrorCode lists them all)")
    raise ValueError(f"unknown error {error!r}; valid names: " + ", ".join(names))


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
