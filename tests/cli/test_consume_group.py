"""`gregor consume TOPIC --group G`: joins the group, prints from the committed offsets (or by
--from-beginning), commits what it printed, and stops at the end with --exit-at-end."""
from __future__ import annotations

from click.testing import CliRunner

from gregor.cli.main import cli
from gregor.client.admin import AdminClient
from tests.client.consumer_group.test_group_consumer_broker import broker, new_topic  # noqa


def run(args):
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [ln for ln in result.output.splitlines() if ln.startswith("v")]


def test_consume_with_group_commits_what_it_printed(broker):
    topic = new_topic(broker, 20, partitions=2)
    b = ["--bootstrap-server", broker.bootstrap]
    first = run(["consume", topic, "--group", "cli-g", "--from-beginning", "--max-messages",
                 "6", "--timeout-ms", "20000"] + b)
    assert len(first) == 6
    offsets = AdminClient({"bootstrap.servers": broker.bootstrap}).list_group_offsets("cli-g")
    assert sum(o for o, _ in offsets.values()) == 6
    # partition 0 resumes at its commit; partition 1 has none: --from-beginning applies
    rest = run(["consume", topic, "--group", "cli-g", "--exit-at-end", "--from-beginning",
                "--timeout-ms", "20000"] + b)
    assert sorted(first + rest) == sorted(f"v{i}" for i in range(20)), (first, rest, offsets)
