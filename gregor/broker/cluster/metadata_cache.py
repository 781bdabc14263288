"""A broker's metadata cache: the cluster as the controller's UpdateMetadata requests describe
it (sans-I/O).

The cache is a ClusterSnapshot (live brokers with every listener, controller id and epoch,
per topic the replicas and partition states), which Metadata, DescribeCluster,
FindCoordinator and the broker's own decisions read. Configs are not in UpdateMetadata: every
broker reads them from ZooKeeper itself (BrokerView), and they are merged in here.
"""
from __future__ import annotations

from . import znodes as z
from .metadata_store import ClusterSnapshot
from .propagation import LEADER_DURING_DELETE, broker_info


def apply_update_metadata(cache: ClusterSnapshot, body: dict,
                          configs: dict[str, dict[str, str]]) -> set[str]:
    """Apply one UpdateMetadata to the cache in place; returns the topics it touched."""
    cache.controller_id = body["controller_id"]
    cache.controller_epoch = body["controller_epoch"]
    cache.brokers = {b["id"]: broker_info(b) for b in body["live_brokers"]}
    touched = set()
    for t in body["topic_states"]:
        name, topic_id = t["topic_name"], z.topic_id_text(t.get("topic_id"))
        touched.add(name)
        view = cache.topics.get(name)
        if view is not None and topic_id and view.assignment.topic_id \
                and view.assignment.topic_id != topic_id:
            view = None                  # deleted and created again: a new topic
        for ps in t["partition_states"]:
            p = ps["partition_index"]
            if ps["leader"] == LEADER_DURING_DELETE:
                if view is not None:
                    view.states.pop(p, None)
                    view.assignment.partitions.pop(p, None)
                continue
            if view is None:
                view = z.TopicView(name, z.TopicAssignment({}, topic_id),
                                   configs=dict(configs.get(name, {})))
                cache.topics[name] = view
            view.assignment.partitions[p] = list(ps["replicas"])
            view.states[p] = z.PartitionState(ps["leader"], ps["leader_epoch"], list(ps["isr"]),
                                              ps["controller_epoch"], ps["zk_version"])
        if view is None or not view.assignment.partitions:
            cache.topics.pop(name, None)
        else:
            cache.topics[name] = view
    return touched


def apply_configs(cache: ClusterSnapshot, configs: dict[str, dict[str, str]]) -> None:
    for name, view in cache.topics.items():
        view.configs = dict(configs.get(name, {}))
