"""TxnOffsetCommit (28): offsets a transactional producer commits for a group. They stay
pending, invisible to OffsetFetch, until the transaction's marker: committed with it or
dropped with an abort."""
from __future__ import annotations

from ..security.checks import GROUP, READ, TRANSACTIONAL_ID, WRITE, allowed, denied_topics
from ._group_common import E, by_topic, coordinator, later, topic_partitions
from ._txn_common import fenced_for
from .offset_commit import known_partition

API_KEY = 28
VERSIONS = (0, 3)          # v4 belongs to KIP-890 part 2 (transaction version 2)
OFFSETS_TOPIC = "__consumer_offsets"


def handle(broker, ctx, request):
    v = ctx.api_version
    convert = fenced_for(v, 3)
    results: dict = {}
    offsets: dict = {}
    entries = topic_partitions(request["topics"])
    if not allowed(broker, ctx, WRITE, TRANSACTIONAL_ID, request["transactional_id"]):
        whole = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        whole = E.GROUP_AUTHORIZATION_FAILED
    else:
        whole = E.NONE
    if whole:
        return {"throttle_time_ms": 0,
                "topics": by_topic({(t, p): whole for t, p, _ in entries})}
    denied = denied_topics(broker, ctx, READ, (t["name"] for t in request["topics"]))
    for topic, partition, p in entries:
        if topic in denied:
            results[(topic, partition)] = E.TOPIC_AUTHORIZATION_FAILED
        elif not known_partition(broker, topic, partition):
            results[(topic, partition)] = E.UNKNOWN_TOPIC_OR_PARTITION
        else:
            results[(topic, partition)] = None
            offsets[(topic, partition)] = (p["committed_offset"], p["committed_leader_epoch"],
                                           p["committed_metadata"])

    def build(stored: dict) -> dict:
        results.update({tp: convert(c) for tp, c in stored.items()})
        return {"throttle_time_ms": 0, "topics": by_topic(results)}
    coord = coordinator(broker)
    if coord is None:
        return build({tp: E.COORDINATOR_NOT_AVAILABLE for tp in offsets})
    group_id = request["group_id"]
    code = coord.group_status(group_id)
    if not code:
        # KIP-890 part 1: the group's offsets partition must be in the producer's transaction
        # (AddOffsetsToTxn), or the offsets could outlive an aborted transaction.
        txn = broker.txn_coordinator
        code = E.COORDINATOR_NOT_AVAILABLE if txn is None else txn.verify_partition(
            request["transactional_id"], request["producer_id"], request["producer_epoch"],
            OFFSETS_TOPIC, coord.partition_of(group_id))
        if code == E.NOT_COORDINATOR and broker.cluster is not None:
            code = E.NONE    # the id's coordinator is another broker: unverifiable here,
            #                  accepted as before KIP-890 (as Produce does)
    if code or not offsets:
        return build({tp: code for tp in offsets})
    fut, respond = later(build)
    coord.txn_commit(group_id, request["producer_id"], request["producer_epoch"],
                     request["generation_id"], request["member_id"],
                     request.get("group_instance_id"), offsets, respond)
    return fut
