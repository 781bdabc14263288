"""Cluster mode: several brokers whose metadata lives in ZooKeeper (see docs/cluster.md).

Only `metadata_store` talks to ZooKeeper; the rest works on its decoded views.
"""
