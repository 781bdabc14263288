"""DescribeConfigs (32): the settings of topics (type 2), of this broker (type 4) and of
groups (type 32: group_configs.py; a group's own value has source GROUP_CONFIG, 8).

A topic setting's value is the topic's own value if it has one (source DYNAMIC_TOPIC_CONFIG),
else the broker's synonym as configured (STATIC_BROKER_CONFIG) or defaulted (DEFAULT_CONFIG).
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..config import BROKER_SETTINGS, TOPIC_SETTINGS, Setting, config_to_string
from ..group_configs import GROUP_CONFIGS, group_config, own_group_configs
from ..security.checks import config_resource_denied
from ..security.settings import listener_settings_set

API_KEY = 32
VERSIONS = (0, 3)           # v4 is the first flexible version

TOPIC, BROKER, GROUP = 2, 4, 32
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 1, 4, 5, 8
_TYPES = {"bool": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7,
          "class": 8, "password": 9}


def handle(broker, ctx, request) -> dict:
    version = ctx.api_version
    synonyms = request.get("include_synonyms", False) and version >= 1
    docs = request.get("include_documentation", False)
    results = []
    for res in request["resources"]:
        keys = res["configuration_keys"]
        out = {"error_code": ErrorCode.NONE, "error_message": None,
               "resource_type": res["resource_type"], "resource_name": res["resource_name"],
               "configs": []}
        results.append(out)
        rtype, rname = res["resource_type"], res["resource_name"]
        denied = config_resource_denied(broker, ctx, rtype, rname, alter=False)
        if denied:
            out["error_code"], out["error_message"] = denied
            continue
        if rtype == TOPIC:
            # In a cluster every broker describes every topic, from ZooKeeper's view.
            t = broker.store.get(rname) if broker.cluster is None else \
                broker.cluster.topic_info(rname)
            if t is None:
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                out["error_message"] = f"topic {rname!r} does not exist"
                continue
            out["configs"] = _topic_entries(broker, t, keys, synonyms, docs)
        elif rtype == BROKER:
            if rname not in ("", str(broker.broker_id)):
                out["error_code"] = ErrorCode.INVALID_REQUEST
                out["error_message"] = (f"this is broker {broker.broker_id}; it cannot "
                                        f"describe broker {rname!r}")
                continue
            out["configs"] = _broker_entries(broker, keys, synonyms, docs)
        elif rtype == GROUP:
            if not rname:
                out["error_code"] = ErrorCode.INVALID_REQUEST
                out["error_message"] = "Group name must not be empty"
                continue
            out["configs"] = _group_entries(broker, rname, keys, synonyms, docs)
        else:
            out["error_code"] = ErrorCode.INVALID_REQUEST
            out["error_message"] = (f"resource type {rtype} is not supported; use 2 (topic), "
                                    "4 (broker) or 32 (group)")
    return {"throttle_time_ms": 0, "results": results}


def _entry(name, value, source, type_, doc, syns, docs) -> dict:
    # Passwords, keys and JAAS configs answer null, as Kafka's sensitive configs do.
    sensitive = type_ == "password"
    if sensitive:
        for syn in syns:
            syn["value"] = None
    return {"name": name, "value": None if sensitive else config_to_string(value),
            "read_only": False, "is_default": source == DEFAULT_CONFIG, "config_source": source,
            "is_sensitive": sensitive, "synonyms": syns, "config_type": _TYPES.get(type_, 0),
            "documentation": doc if docs else None}


def _topic_entries(broker, t, keys, synonyms, docs) -> list[dict]:
    cfg = broker.topic_config(t)
    out = []
    for name in sorted(TOPIC_SETTINGS):
        if keys is not None and name not in keys:
            continue
        type_, synonym, _ = TOPIC_SETTINGS[name]
        if name in t.configs:
            source = DYNAMIC_TOPIC_CONFIG
        elif synonym is not None and not broker.config.is_default(synonym):
            source = STATIC_BROKER_CONFIG
        else:
            source = DEFAULT_CONFIG
        syns = []
        if synonyms:
            if name in t.configs:
                syns.append({"name": name, "value": config_to_string(cfg[name]),
                             "source": DYNAMIC_TOPIC_CONFIG})
            if synonym is not None:
                bsrc = DEFAULT_CONFIG if broker.config.is_default(synonym) else \
                    STATIC_BROKER_CONFIG
                syns.append({"name": synonym,
                             "value": config_to_string(broker.config.broker_value_for_topic(name)),
                             "source": bsrc})
        doc = BROKER_SETTINGS[synonym].doc if synonym in BROKER_SETTINGS else None
        out.append(_entry(name, cfg[name], source, type_, doc, syns, docs))
    return out


def _broker_entries(broker, keys, synonyms, docs) -> list[dict]:
    out = []
    settings = dict(BROKER_SETTINGS)
    settings.update({name: Setting(*spec) for name, spec in         # listener.name.<l>.ssl.*
                     listener_settings_set(broker.config).items()})
    for name, s in sorted(settings.items()):
        if keys is not None and name not in keys:
            continue
        source = DEFAULT_CONFIG if broker.config.is_default(name) else STATIC_BROKER_CONFIG
        value = broker.config.get(name)
        syns = [{"name": name, "value": config_to_string(value), "source": source}] \
            if synonyms else []
        out.append(_entry(name, value, source, s.type, s.doc, syns, docs))
    return out


def _group_entries(broker, group, keys, synonyms, docs) -> list[dict]:
    own = own_group_configs(broker, group)
    values = group_config(broker, group)
    out = []
    for name, s in sorted(GROUP_CONFIGS.items()):
        if keys is not None and name not in keys:
            continue
        syn = s.default_from
        syn_source = DEFAULT_CONFIG if syn is None or broker.config.is_default(syn) else \
            STATIC_BROKER_CONFIG
        source = GROUP_CONFIG if name in own else syn_source
        syns = []
        if synonyms:
            if name in own:
                syns.append({"name": name, "value": own[name], "source": GROUP_CONFIG})
            if syn is not None:
                syns.append({"name": syn, "value": config_to_string(broker.config.get(syn)),
                             "source": syn_source})
        out.append(_entry(name, values[name], source, s.type, s.doc, syns, docs))
    return out
