"""IncrementalAlterConfigs (44): change single configs of a resource, keeping the others.

Operations (Kafka's AlterConfigOp): SET (0) a value, DELETE (1) back to the default, APPEND (2)
and SUBTRACT (3) items of a list config (only list configs: cleanup.policy here; else
INVALID_REQUEST). Per resource, in Kafka's order: duplicate resources or config names and
null values (but for DELETE) are INVALID_REQUEST; then ALTER_CONFIGS on the resource (the topic,
the group, the cluster for brokers and loggers); then the new configs are validated as a whole
(INVALID_CONFIG) and, unless validate_only, stored the way AlterConfigs stores them.

- TOPIC (2): the topic's own configs (UNKNOWN_TOPIC_OR_PARTITION if it does not exist), in the
  data directory on a single node, in /config/topics/<t> in a cluster (broker.py / cluster).
- GROUP (32): the group configs of group_configs.py (the group need not exist), in the entity
  config store (groups/<g>: a file, or /config/groups/<g> in a cluster).
- BROKER (4): gregor's broker settings are static (restart with --set), so any change is
  INVALID_REQUEST, as Kafka answers for a setting it cannot update dynamically.
- BROKER_LOGGER (8): SET a Python logger's level by Kafka's level names, DELETE resets it to
  the root logger's; unknown loggers and levels are INVALID_CONFIG. Not persisted (Kafka's are
  not either).
"""
from __future__ import annotations

import logging

from ...protocol.errors import ErrorCode, KafkaError
from ..config import BROKER_SETTINGS, TOPIC_SETTINGS, checked_topic_configs
from ..group_configs import GROUP_CONFIGS, checked_group_configs, group_path, \
    own_group_configs
from ..security.checks import config_resource_denied
from ._txn_common import respond_later

API_KEY = 44
VERSIONS = (0, 1)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
_LEVELS = {"ALL": 1, "TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
           "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
           "OFF": logging.CRITICAL + 10}


class _Refused(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def handle(broker, ctx, request):
    resources = request["resources"]
    validate_only = request["validate_only"]
    counts: dict = {}
    for res in resources:
        key = (res["resource_type"], res["resource_name"])
        counts[key] = counts.get(key, 0) + 1

    async def run():
        out = []
        for res in resources:
            try:
                if counts[(res["resource_type"], res["resource_name"])] > 1:
                    raise _Refused(ErrorCode.INVALID_REQUEST,
                                   "Each resource must appear at most once.")
                await _alter(broker, ctx, res, validate_only)
                out.append((ErrorCode.NONE, None))
            except _Refused as e:
                out.append((e.code, e.message))
            except KafkaError as e:
                out.append((e.code, e.message))
            if out[-1][0]:
                broker.metrics.error(API_KEY, ErrorCode(out[-1][0]).name)
        return out

    def build(codes) -> dict:
        return {"throttle_time_ms": 0, "responses": [
            {"error_code": code, "error_message": message,
             "resource_type": res["resource_type"], "resource_name": res["resource_name"]}
            for res, (code, message) in zip(resources, codes or [
                (ErrorCode.REQUEST_TIMED_OUT, None)] * len(resources))]}
    return respond_later(run(), build)


async def _alter(broker, ctx, res, validate_only: bool) -> None:
    rtype, name, ops = res["resource_type"], res["resource_name"], res["configs"]
    names = [c["name"] for c in ops]
    if len(set(names)) != len(names):
        raise _Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c["name"] for c in ops if c["config_operation"] != DELETE and c["value"] is None]
    if nulls:
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       "Null value not supported for : " + ", ".join(nulls))
    bad_ops = [c["name"] for c in ops if c["config_operation"] not in (SET, DELETE, APPEND,
                                                                       SUBTRACT)]
    if bad_ops:
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       "Unknown config operation for : " + ", ".join(bad_ops))
    if rtype not in (TOPIC, BROKER, BROKER_LOGGER, GROUP):
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       f"resource type {rtype} cannot be altered; use 2 (topic), 4 (broker), "
                       "8 (broker logger) or 32 (group)")
    if rtype in (BROKER, BROKER_LOGGER) and name != str(broker.broker_id) and \
            not (rtype == BROKER and name == ""):
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       f"Unexpected broker id, expected {broker.broker_id}, but received "
                       f"{name}")
    if rtype == GROUP and not name:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    denied = config_resource_denied(broker, ctx, rtype, name, alter=True)
    if denied:
        raise _Refused(*denied)
    if rtype == TOPIC:
        await _alter_topic(broker, name, ops, validate_only)
    elif rtype == GROUP:
        await _alter_group(broker, name, ops, validate_only)
    elif rtype == BROKER:
        _alter_broker(ops)
    else:
        _alter_loggers(ops, validate_only)


def _apply(own: dict, ops, is_list, current) -> dict:
    """own configs after the operations; is_list(name) says whether APPEND/SUBTRACT may apply,
    current(name) is the value in force (the default when the resource has none)."""
    new = dict(own)
    for c in ops:
        key, op, value = c["name"], c["config_operation"], c["value"]
        if op == SET:
            new[key] = value
        elif op == DELETE:
            new.pop(key, None)
        else:
            if not is_list(key):
                verb = "append" if op == APPEND else "subtract"
                raise _Refused(ErrorCode.INVALID_REQUEST,
                               f"Config value {verb} is not allowed for config key: {key}")
            old = new.get(key)
            items = [i for i in (current(key) if old is None else old).split(",") if i]
            given = [i.strip() for i in value.split(",") if i.strip()]
            if op == APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            new[key] = ",".join(items)
    return new


def _unknown_list_check(settings, what: str):
    def is_list(key: str) -> bool:
        if key not in settings:
            raise _Refused(ErrorCode.INVALID_CONFIG, f"Unknown {what} config name: {key}")
        return settings[key][0] == "list"
    return is_list


async def _alter_topic(broker, name: str, ops, validate_only: bool) -> None:
    from ..config import config_to_string
    t = broker.store.get(name) if broker.cluster is None else broker.cluster.topic_info(name)
    if t is None:
        raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    effective = broker.topic_config(t)
    new = _apply(dict(t.configs), ops, _unknown_list_check(TOPIC_SETTINGS, "topic"),
                 lambda key: config_to_string(effective[key]))
    checked_topic_configs(new)                  # INVALID_CONFIG naming the bad entry
    if broker.cluster is not None:
        await broker.cluster.alter_topic_configs(name, new, validate_only)
    else:
        broker.alter_topic_configs(name, new, validate_only)


async def _alter_group(broker, group: str, ops, validate_only: bool) -> None:
    own = own_group_configs(broker, group)
    new = _apply(own, ops, _unknown_list_check(
        {k: ("int" if s.type == "int" else "string",) for k, s in GROUP_CONFIGS.items()},
        "group"), lambda key: "")
    clean = checked_group_configs(broker.config, new)
    if validate_only or clean == own:
        return
    changes = {k: clean.get(k) for k in set(own) | set(clean)}
    await broker.entity_configs.alter(group_path(group), changes)


def _alter_broker(ops) -> None:
    if not ops:
        return
    unknown = [c["name"] for c in ops if c["name"] not in BROKER_SETTINGS]
    names = ", ".join(c["name"] for c in ops)
    raise _Refused(ErrorCode.INVALID_REQUEST, (
        f"Cannot update these configs dynamically: {names}: gregor's broker settings are "
        "static (restart with --set key=value)"
        + (f"; unknown to gregor: {', '.join(unknown)}" if unknown else "")))


def _alter_loggers(ops, validate_only: bool) -> None:
    known = logging.root.manager.loggerDict
    for c in ops:
        name, op, value = c["name"], c["config_operation"], c["value"]
        if name != "root" and name not in known:
            raise _Refused(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
        if op in (APPEND, SUBTRACT):
            raise _Refused(ErrorCode.INVALID_REQUEST,
                           f"{'APPEND' if op == APPEND else 'SUBTRACT'} operation is not "
                           f"allowed for the BROKER_LOGGER resource")
        if op == SET and value.upper() not in _LEVELS:
            raise _Refused(ErrorCode.INVALID_CONFIG,
                           f"Cannot set the log level of {name} to {value} as it is not a "
                           f"supported log level. Valid log levels are "
                           f"{', '.join(_LEVELS)}")
        if op == DELETE and name == "root":
            raise _Refused(ErrorCode.INVALID_REQUEST,
                           "Removing the log level of the root logger is not allowed")
    if validate_only:
        return
    for c in ops:
        lg = logging.getLogger() if c["name"] == "root" else logging.getLogger(c["name"])
        lg.setLevel(_LEVELS[c["value"].upper()] if c["config_operation"] == SET
                    else logging.NOTSET)
