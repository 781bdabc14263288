"""The `gregor` command (main.py): broker, cluster, topics, produce, consume, groups, users,
acls, quotas, console, perf and demo, one module each; client commands share
client_options.py (bootstrap server, --command-config)."""
