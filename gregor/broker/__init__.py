"""The broker: `Broker` (broker.py) owns the data directory, topics and partitions; server.py
is the asyncio network layer (framing, limits, per-connection order); apis/ holds one handler
per API key; replica_manager, partition and purgatory carry produce and fetch; group/ and
txn/ are the coordinators; cluster/ is ZooKeeper mode (controller, replication); security/
holds TLS, SASL, principals and the ACL authorizer; quotas/ throttles clients over their
quotas, kept with SCRAM credentials in entity_configs/. See docs/broker.md."""
