"""gregor's consumer in group mode: `membership` (the member's state machine, sans I/O) and
`offset_ops` (its commits and offset lookups), `group_client` (the background thread that drives
it), `consumer_methods` (subscribe / commit inside the Consumer), and the assignors the elected
leader runs (`assignors`: range, roundrobin; `sticky`: cooperative-sticky)."""
