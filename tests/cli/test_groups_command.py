"""`gregor groups` and the admin client's group calls against a broker, with a confluent-kafka
consumer group as the subject (an independent client made the group)."""
from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from gregor.cli.main import cli

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402


def run(args, ok=True):
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_groups_list_describe_reset_delete(cli_broker):
    from gregor.client.admin import AdminClient, NewTopic
    b = ["--bootstrap-server", cli_broker.bootstrap]
    topic, group = f"gcli-{time.monotonic_ns()}", f"app-{time.monotonic_ns()}"
    admin = AdminClient({"bootstrap.servers": cli_broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])
    p = Producer({"bootstrap.servers": cli_broker.bootstrap})
    for i in range(20):
        p.produce(topic, value=b"%d" % i, partition=i % 2)
    p.flush(30)
    c = Consumer({"bootstrap.servers": cli_broker.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "client.id": "the-app"})
    c.subscribe([topic])
    got, deadline = 0, time.monotonic() + 60
    while got < 6 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got += 1
    c.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)],
              asynchronous=False)
    try:
        listed = {g.group_id: g for g in admin.list_groups()}
        assert listed[group].state == "Stable" and listed[group].protocol_type == "consumer"
        d = admin.describe_groups([group])[group]
        assert d.state == "Stable" and len(d.members) == 1
        assert d.members[0].client_id == "the-app"
        assert d.members[0].assignment == [(topic, 0), (topic, 1)]
        assert admin.list_group_offsets(group) == {(topic, 0): (3, ""), (topic, 1): (4, "")}
        out = run(["groups", "describe", group] + b).output
        assert "Stable" in out and "the-app" in out
        lines = [ln.split() for ln in out.splitlines() if ln.strip().startswith(topic)]
        # topic, partition, committed, log end, lag
        assert sorted((x[1], x[2], x[3], x[4]) for x in lines) == \
            [("0", "3", "10", "7"), ("1", "4", "10", "6")]
        assert group in run(["groups", "list"] + b).output
        busy = run(["groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                    "--execute"] + b, ok=False)
        assert busy.exit_code == 1 and "members" in busy.output
    finally:
        c.close()
    dry = run(["groups", "reset-offsets", group, "--topic", topic, "--to-latest"] + b).output
    assert "Dry run" in dry
    assert admin.list_group_offsets(group)[(topic, 0)][0] == 3
    run(["groups", "reset-offsets", group, "--topic", f"{topic}:1", "--to-offset", "2",
         "--execute"] + b)
    assert admin.list_group_offsets(group) == {(topic, 0): (3, ""), (topic, 1): (2, "")}
    run(["groups", "reset-offsets", group, "--topic", topic, "--shift-by", "-100",
         "--execute"] + b)
    assert admin.list_group_offsets(group) == {(topic, 0): (0, ""), (topic, 1): (0, "")}
    assert f"Deleted group {group}." in run(["groups", "delete", group] + b).output
    assert group not in {g.group_id for g in admin.list_groups()}
    missing = run(["groups", "delete", group] + b, ok=False)
    assert missing.exit_code == 1 and "gregor groups list" in missing.output
    admin.close()
