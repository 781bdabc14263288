"""The transaction coordinator (Kafka's KIP-98 exactly-once): state per transactional id,
its durable log `__transaction_state`, and the markers that end transactions."""
