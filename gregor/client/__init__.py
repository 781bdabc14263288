"""gregor's Kafka clients: the network layer (connections, ApiVersions negotiation, metadata),
the producer (producer/), the consumer (consumer/), the admin client (admin*.py) and TLS /
SASL for all of them (security/). They work against any Kafka broker."""
