"""The group coordinator: consumer groups of both protocols, the classic rebalance protocol
(coordinator.py: JoinGroup / SyncGroup / Heartbeat / LeaveGroup) and KIP-848's
(consumer_coordinator.py: ConsumerGroupHeartbeat with server-side assignors), their committed
offsets (offsets.py), all kept in `__consumer_offsets` in Kafka's record schemas
(log_records.py, consumer_records.py) and reloaded from it. See docs/groups.md."""
