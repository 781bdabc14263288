"""Kafka's wire protocol without I/O: primitives, the schema engine and one description per
API (messages/), request and response headers, record batches and legacy message sets
(records/), compression codecs, every error code (errors.py), the consumer group protocol's
embedded formats and the ACL model shared by broker and clients."""
