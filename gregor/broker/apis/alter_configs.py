"""AlterConfigs (33): replace a topic's own settings (non-incremental: every setting not in
the request goes back to the broker default). Broker settings are static here: changing them
needs a restart with --set or --config, so broker resources are refused.

In a cluster any broker takes it, as Kafka's ZooKeeper-mode brokers did: it writes the
topic's /config/topics/<t> znode, and every broker (watching it) applies the new settings to
its replicas when the change reaches its view; the answer waits for the broker's own view."""
from __future__ import annotations

from ...protocol.errors import ErrorCode, KafkaError
from ..security.checks import config_resource_denied
from ._txn_common import respond_later

API_KEY = 33
VERSIONS = (0, 1)           # v2 is the first flexible version
TOPIC, BROKER = 2, 4


def handle(broker, ctx, request):
    denied = {i: config_resource_denied(broker, ctx, res["resource_type"],
                                        res["resource_name"], alter=True)
              for i, res in enumerate(request["resources"])}
    if broker.cluster is not None:
        return _in_cluster(broker, request, denied)
    results = []
    for i, res in enumerate(request["resources"]):
        out = {"error_code": ErrorCode.NONE, "error_message": None,
               "resource_type": res["resource_type"], "resource_name": res["resource_name"]}
        results.append(out)
        if denied[i]:
            out["error_code"], out["error_message"] = denied[i]
            continue
        if res["resource_type"] != TOPIC:
            out["error_code"] = ErrorCode.INVALID_REQUEST
            out["error_message"] = ("only topic configs can be altered; broker settings are "
                                    "static (restart with --set key=value)")
            continue
        try:
            configs = {c["name"]: c["value"] for c in res["configs"]}
            broker.alter_topic_configs(res["resource_name"], configs, request["validate_only"])
        except KafkaError as e:
            out["error_code"] = e.code
            out["error_message"] = e.message
            broker.metrics.error(API_KEY, e.name)
    return {"throttle_time_ms": 0, "responses": results}


def _in_cluster(broker, request, denied: dict):
    member = broker.cluster

    async def run():
        out = []
        for i, res in enumerate(request["resources"]):
            if denied[i]:
                out.append(denied[i])
                continue
            if res["resource_type"] != TOPIC:
                out.append((ErrorCode.INVALID_REQUEST, "only topic configs can be altered; "
                            "broker settings are static (restart with --set key=value)"))
                continue
            try:
                configs = {c["name"]: c["value"] for c in res["configs"]}
                await member.alter_topic_configs(res["resource_name"], configs,
                                                 request["validate_only"])
                out.append((ErrorCode.NONE, None))
            except KafkaError as e:
                out.append((e.code, e.message))
                broker.metrics.error(API_KEY, e.name)
        return out

    def build(codes) -> dict:
        results = []
        for i, res in enumerate(request["resources"]):
            code, message = codes[i] if codes else (ErrorCode.REQUEST_TIMED_OUT, None)
            results.append({"error_code": code, "error_message": message,
                            "resource_type": res["resource_type"],
                            "resource_name": res["resource_name"]})
        return {"throttle_time_ms": 0, "responses": results}
    return respond_later(run(), build)
