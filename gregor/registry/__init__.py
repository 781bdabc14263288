"""gregor's Schema Registry: Confluent's REST API on the cluster's own `_schemas` topic.

    from gregor.registry.server import SchemaRegistry, RegistryThread

Modules: records (the topic's byte-exact records), state (memory rebuilt from them), store
(the topic's I/O), service (Confluent's rules), avro / avro_compat / schema_types /
compatibility (schema types and their checkers), routes + app + http_server + negotiation
(the REST API), election + election_protocol + forwarding (one writer among instances),
auth (basic auth users, TLS), server (all of it together). docs/schema-registry.md.
"""
