"""Dynamic entity configs (users, clients, ips) shared by quotas and SCRAM credentials:
names and paths (names.py), the in-memory store and its listeners (store.py), the single-node
file backend (file_store.py); the cluster backend is gregor/broker/cluster/entity_configs_zk.py."""
