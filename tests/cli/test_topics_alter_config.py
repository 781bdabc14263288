"""`gregor topics alter` over IncrementalAlterConfigs: set, delete, append and subtract one
config without touching the others."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from gregor.cli.main import cli

pytestmark = pytest.mark.interop


def run(args, ok=True):
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_append_subtract_and_delete_keep_the_other_configs(cli_broker):
    b = ["--bootstrap-server", cli_broker.bootstrap]
    run(["topics", "create", "cli-iac", "--config", "retention.ms=3600000"] + b)
    run(["topics", "alter", "cli-iac", "--append-config", "cleanup.policy=compact",
         "--config", "segment.bytes=2000000"] + b)
    desc = run(["topics", "describe", "cli-iac"] + b).output
    assert "cleanup.policy=delete,compact" in desc and "segment.bytes=2000000" in desc
    assert "retention.ms=3600000" in desc
    run(["topics", "alter", "cli-iac", "--subtract-config", "cleanup.policy=delete",
         "--delete-config", "retention.ms"] + b)
    desc = run(["topics", "describe", "cli-iac"] + b).output
    assert "cleanup.policy=compact" in desc and "retention.ms=3600000" not in desc
    assert "segment.bytes=2000000" in desc
    bad = run(["topics", "alter", "cli-iac", "--append-config", "retention.ms=5"] + b, ok=False)
    assert bad.exit_code == 1 and "append is not allowed" in bad.output
