"""`gregor schemas` against a running registry."""
import json

from click.testing import CliRunner

from gregor.cli.schemas import command

V1 = json.dumps({"type": "record", "name": "C", "fields": [{"name": "a", "type": "int"}]})
V2 = json.dumps({"type": "record", "name": "C", "fields": [{"name": "a", "type": "string"}]})


def run(url, *args):
    return CliRunner().invoke(command, ["--url", url, *args])


def test_schemas_commands(registry, tmp_path):
    url = registry.url
    (tmp_path / "v1.avsc").write_text(V1)
    (tmp_path / "v2.avsc").write_text(V2)
    r = run(url, "register", "cli/orders", str(tmp_path / "v1.avsc"))
    assert r.exit_code == 0, r.output
    sid = int(r.output)
    assert "cli/orders" in run(url, "list").output.split()
    got = json.loads(run(url, "get", "cli/orders").output)
    assert (got["id"], got["version"]) == (sid, 1)
    assert json.loads(json.loads(run(url, "get", "--id", str(sid)).output)["schema"]) == \
        json.loads(V1)
    r = run(url, "test", "cli/orders", str(tmp_path / "v2.avsc"))
    assert r.exit_code == 1 and "TYPE_MISMATCH" in r.output
    assert run(url, "config", "cli/orders").output.strip() == "BACKWARD"
    assert run(url, "config", "cli/orders", "--set", "none").output.strip() == "NONE"
    assert run(url, "test", "cli/orders", str(tmp_path / "v2.avsc")).output.strip() == \
        "compatible"
    r = run(url, "delete", "cli/orders", "--permanent")
    assert r.exit_code == 1 and "40405" in r.output      # soft delete first
    assert json.loads(run(url, "delete", "cli/orders").output) == [1]
    assert json.loads(run(url, "delete", "cli/orders", "--permanent").output) == [1]
    r = run(url, "get", "cli/orders")
    assert r.exit_code == 1 and "40401" in r.output
