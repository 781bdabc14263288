"""The group coordinator: consumer groups (the classic rebalance protocol) and their committed
offsets, kept in `__consumer_offsets`. See docs/groups.md."""
