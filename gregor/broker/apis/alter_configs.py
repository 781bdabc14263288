"""AlterConfigs (33): replace a topic's own settings (non-incremental: every setting not in
the request goes back to the broker default). Broker settings are static here: changing them
needs a restart with --set or --config, so broker resources are refused."""
from __future__ import annotations

from ...protocol.errors import ErrorCode, KafkaError

API_KEY = 33
VERSIONS = (0, 1)           # v2 is the first flexible version
TOPIC, BROKER = 2, 4


def handle(broker, ctx, request) -> dict:
    results = []
    for res in request["resources"]:
        out = {"error_code": ErrorCode.NONE, "error_message": None,
               "resource_type": res["resource_type"], "resource_name": res["resource_name"]}
        results.append(out)
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
