"""What a test cluster reads from ZooKeeper: registered brokers, the controller, and each
partition's leader and ISR. Shared by every cluster harness (they hold a KazooClient as
`self.zk`); reads that fail while ZooKeeper is cut off or paused answer "nothing yet"."""
from __future__ import annotations

import json


class ZooKeeperView:
    zk = None           # a started KazooClient, set by the harness

    def json(self, path: str):
        data, _ = self.zk.get(path)
        return json.loads(data) if data else None

    def registered(self) -> list[int]:
        try:
            return sorted(int(i) for i in self.zk.get_children("/brokers/ids"))
        except Exception:
            return []

    def controller_id(self) -> int:
        """The controller's broker id (-1 while there is none)."""
        try:
            return int(self.json("/controller")["brokerid"])
        except Exception:
            return -1

    def controller(self) -> int:
        return self.controller_id()

    def partition_state(self, topic: str, partition: int) -> dict:
        """{"leader": id, "leader_epoch": n, "isr": [...]} ({} if none yet)."""
        try:
            return self.json(f"/brokers/topics/{topic}/partitions/{partition}/state") or {}
        except Exception:
            return {}

    def leader_of(self, topic: str, partition: int) -> int:
        """The partition's leader now (-1 while there is none)."""
        return int(self.partition_state(topic, partition).get("leader", -1))

    def isr_of(self, topic: str, partition: int) -> list[int]:
        return list(self.partition_state(topic, partition).get("isr", []))
