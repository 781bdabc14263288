"""`gregor share-groups` against a broker, with confluent-kafka's ShareConsumer as the member
(an independent client made the group)."""
from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from gregor.cli.main import cli

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")


def run(args, ok=True):
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_share_groups_list_describe_reset_delete(cli_broker):
    from confluent_kafka import Producer, ShareConsumer
    from gregor.client.admin import AdminClient, NewTopic
    b = ["--bootstrap-server", cli_broker.bootstrap]
    topic, group = f"scli-{time.monotonic_ns()}", f"workers-{time.monotonic_ns()}"
    AdminClient({"bootstrap.servers": cli_broker.bootstrap}).create_topics([NewTopic(topic, 1,
                                                                                     1)])
    c = ShareConsumer({"bootstrap.servers": cli_broker.bootstrap, "group.id": group,
                       "client.id": "the-worker"})
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "\t0\t0" not in run(
            ["share-groups", "describe", group, *b], ok=False).output:
        c.poll(0.2)                                # until the share-partition starts at 0
    p = Producer({"bootstrap.servers": cli_broker.bootstrap})
    for i in range(5):
        p.produce(topic, value=b"%d" % i)
    p.flush(30)
    got, deadline = 0, time.monotonic() + 60
    while got < 5 and time.monotonic() < deadline:
        got += len([m for m in c.poll(0.2) if not m.error()])
    assert got == 5
    c.poll(0.5)                                    # implicit mode: accepts the five
    assert f"{group}\tStable" in run(["share-groups", "list", *b]).output
    out = run(["share-groups", "describe", group, *b]).output
    assert "the-worker" in out and f"{topic}\t0\t5\t5\t0" in out, out
    refused = run(["share-groups", "delete", group, *b], ok=False)
    assert refused.exit_code != 0                  # it has a member
    c.close()
    plan = run(["share-groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                *b]).output
    assert "dry run" in plan and f"{topic}\t0\t0" in plan
    run(["share-groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
         "--execute", *b])
    assert f"{topic}\t0\t0\t5\t5" in run(["share-groups", "describe", group, *b]).output
    run(["share-groups", "delete", group, *b])
    assert group not in run(["share-groups", "list", *b]).output
