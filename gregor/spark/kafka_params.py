"""The `kafka.*` options of the data source, as each gregor client gets them.

Spark hands every `kafka.*` option to its Kafka clients unchanged, and a Kafka client only
logs a warning for a key it does not know ("The configuration 'x' was supplied but isn't a
known config"). Jobs rely on that: one option dict often serves a source and a sink, so a
source sees `kafka.linger.ms` and a sink `kafka.group.id`. gregor's clients are strict
(an unknown key is a ConfigError), so the data source passes each client only the keys it
knows and logs the others the way Kafka does, once per process and key.
"""
from __future__ import annotations

import logging
from typing import Iterable, Mapping

from gregor.client.config import canonical_name

log = logging.getLogger("gregor.spark")

_warned: set[tuple[str, str]] = set()


def _known(role: str) -> set[str]:
    if role == "consumer":
        from gregor.client.consumer.config import CONSUMER_OPTIONS as options
    elif role == "producer":
        from gregor.client.producer.settings import PRODUCER_OPTIONS as options
    else:
        from gregor.client.admin import ADMIN_OPTIONS as options
    return {o.name for o in options}


def _filter(config: Mapping, role: str, warn: bool) -> dict:
    known = _known(role)
    out, unknown = {}, []
    for key, value in config.items():
        if key in known or canonical_name(key) in known:
            out[key] = value
        else:
            unknown.append(key)
    if warn:
        _warn_unused(role, unknown)
    return out


def _warn_unused(role: str, keys: Iterable[str]) -> None:
    for key in keys:
        if (role, key) in _warned:
            continue
        _warned.add((role, key))
        log.warning("the configuration 'kafka.%s' was supplied but is not a known gregor %s "
                    "config; ignored (as Kafka's clients ignore unknown keys)", key, role)


def consumer_params(config: Mapping, *, warn: bool = True) -> dict:
    """The keys of `config` gregor's Consumer knows; the others are logged once and dropped."""
    return _filter(config, "consumer", warn)


def producer_params(config: Mapping, *, warn: bool = True) -> dict:
    return _filter(config, "producer", warn)


def admin_params(config: Mapping) -> dict:
    """The admin client gets the keys it knows silently: the source's options are consumer
    settings, which it has no use for."""
    return _filter(config, "admin", warn=False)
