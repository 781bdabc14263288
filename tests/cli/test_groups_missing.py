"""`gregor groups describe` of a group that does not exist fails as kafka-consumer-groups.sh
does ("Consumer group 'x' does not exist."), with exit code 1; `groups list` gives the group
type beside the protocol type, as the console does."""
from __future__ import annotations

from click.testing import CliRunner

from gregor.cli.main import cli


def test_describe_of_a_missing_group_fails_with_kafkas_words(cli_broker):
    out = CliRunner().invoke(cli, ["groups", "describe", "no-such-group", "--bootstrap-server",
                                   cli_broker.bootstrap])
    assert out.exit_code == 1, out.output
    assert "Consumer group 'no-such-group' does not exist." in out.output
    assert "State" not in out.output


def test_list_gives_type_and_protocol(cli_broker):
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": cli_broker.bootstrap, "group.id": "listed",
                  "enable.auto.commit": False})
    try:
        c.assign([("__listed", 0)])
        from gregor.client.admin import AdminClient, NewTopic
        with AdminClient({"bootstrap.servers": cli_broker.bootstrap}) as admin:
            admin.create_topics([NewTopic("listed-t", 1, 1)])
        c.assign([("listed-t", 0)])
        c.commit(offsets=[("listed-t", 0, 0)])
    finally:
        c.close()
    out = CliRunner().invoke(cli, ["groups", "list", "--bootstrap-server", cli_broker.bootstrap])
    assert out.exit_code == 0, out.output
    row = next(line.split("\t") for line in out.output.splitlines() if line.startswith("listed\t"))
    assert row[2] == "classic" and len(row) == 4, row      # no members: protocol type empty
