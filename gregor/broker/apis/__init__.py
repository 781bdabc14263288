"""One handler module per API key. Each module defines

    API_KEY = <int>
    VERSIONS = (lowest, highest)     # what the handler really implements
    def handle(broker, ctx, request) -> body dict | Future | NO_RESPONSE

`build_handlers(broker)` collects them. A handler is only registered (and so only advertised
by ApiVersions) when its message description exists in gregor.protocol.messages; its highest
version is capped by what that description knows.
"""
from __future__ import annotations

import functools
import importlib
import logging

from ...protocol import messages
from ..server import Handler

log = logging.getLogger("gregor.broker.apis")

MODULES = [
    "produce", "fetch", "list_offsets", "metadata", "api_versions", "create_topics",
    "delete_topics", "delete_records", "init_producer_id", "describe_configs",
    "create_partitions", "alter_configs", "incremental_alter_configs", "find_coordinator",
    "describe_cluster",
    "add_partitions_to_txn", "add_offsets_to_txn", "end_txn", "describe_transactions",
    "list_transactions", "describe_producers", "write_txn_markers",
    "join_group", "sync_group", "heartbeat", "leave_group", "offset_commit", "offset_fetch",
    "describe_groups", "list_groups", "delete_groups", "offset_delete", "txn_offset_commit",
    "offset_for_leader_epoch", "controlled_shutdown",
    "leader_and_isr", "update_metadata", "stop_replica", "alter_partition",
    "consumer_group_heartbeat", "consumer_group_describe",
    "share_group_heartbeat", "share_group_describe", "share_fetch", "share_acknowledge",
    "describe_share_group_offsets", "alter_share_group_offsets", "delete_share_group_offsets",
    "read_share_group_state", "write_share_group_state", "initialize_share_group_state",
    "delete_share_group_state", "read_share_group_state_summary",
    "describe_client_quotas", "alter_client_quotas",
    "describe_acls", "create_acls", "delete_acls",
    "sasl_handshake", "sasl_authenticate", "describe_user_scram_credentials",
    "alter_user_scram_credentials", "describe_log_dirs",
]


def build_handlers(broker) -> dict[int, Handler]:
    handlers: dict[int, Handler] = {}
    for name in MODULES:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith("gregor."):
                log.debug("handler %s not available: %s", name, e)
                continue
            raise
        api = messages.APIS.get(mod.API_KEY)
        if api is None:
            log.debug("no message description for API key %d yet; not serving it", mod.API_KEY)
            continue
        lo, hi = mod.VERSIONS
        hi = min(hi, api.valid[1])
        lo = max(lo, api.valid[0])
        if lo > hi:
            continue
        handlers[mod.API_KEY] = Handler(api, lo, hi, functools.partial(mod.handle, broker))
    return handlers


def version_table(handlers: dict[int, Handler]) -> list[dict]:
    """The ApiVersions api_keys array for these handlers."""
    return [{"api_key": k, "min_version": h.min_version, "max_version": h.max_version}
            for k, h in sorted(handlers.items())]
