"""The console with a Schema Registry (gregor.testing.Broker(schema_registry=True)): the
Schemas pages (subjects, versions side by side, compatibility levels, the compatibility test),
and records written by confluent-kafka's Avro, JSON Schema and Protobuf serializers shown
decoded in the messages page, the record page, search and export; values that are not framed
or carry an unknown id are shown as bytes with a note. Without a registry the page says how
to configure one."""
from __future__ import annotations

import csv
import io
import json
import warnings

import pytest

from tests.console.conftest import csrf, unique

ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[avro,schemaregistry] is a test dependency")
from confluent_kafka.schema_registry import protobuf as ck_proto  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from gregor import AdminClient, Producer  # noqa: E402
from gregor.console import ConsoleSettings  # noqa: E402
from gregor.console.app import create_app  # noqa: E402
from tests.serde.proto_messages import User  # noqa: E402

AVRO_V1 = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}
AVRO_V2 = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"}, {"name": "item", "type": "string"},
    {"name": "qty", "type": "int", "default": 1}]}
JSON_SCHEMA = {"type": "object", "title": "Ping",
               "properties": {"seq": {"type": "integer"}, "note": {"type": "string"}}}


@pytest.fixture(scope="module")
def stack():
    from gregor.testing import Broker
    with Broker(schema_registry=True) as b:
        yield b


def _client(app):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    return TestClient(app)


@pytest.fixture(scope="module")
def client(stack):
    settings = ConsoleSettings(bootstrap=stack.bootstrap_servers, request_timeout_s=5.0,
                               schema_registry_url=stack.schema_registry_url)
    with _client(create_app(settings, sample=False)) as c:
        c.get("/")
        yield c


def _ctx(topic):
    return SerializationContext(topic, MessageField.VALUE)


def _produce(stack, topic, values):
    with AdminClient({"bootstrap.servers": stack.bootstrap_servers}) as a:
        a.create_topics([topic], num_partitions=1)
    p = Producer({"bootstrap.servers": stack.bootstrap_servers})
    try:
        for v in values:
            p.send(topic, value=v).get(10)
    finally:
        p.close()


@pytest.fixture(scope="module")
def topics(stack):
    """One topic per format, each value written by confluent-kafka's serializer, plus a
    plain value, a framed value with an unknown id, and (Avro) a second schema version."""
    reg = ck_sr.SchemaRegistryClient({"url": stack.schema_registry_url})
    conf = {"subject.name.strategy": ck_sr.topic_subject_name_strategy}
    avro_t, json_t, proto_t = unique("avro"), unique("json"), unique("proto")
    a1 = AvroSerializer(reg, json.dumps(AVRO_V1), conf=conf)
    a2 = AvroSerializer(reg, json.dumps(AVRO_V2), conf=conf)
    _produce(stack, avro_t, [a1({"id": 1, "item": "apple"}, _ctx(avro_t)),
                             a2({"id": 2, "item": "pear", "qty": 7}, _ctx(avro_t)),
                             b"plain text value",
                             b"\x00\x00\x01\x86\xa0garbage"])      # id 100000: unknown
    js = JSONSerializer(json.dumps(JSON_SCHEMA), reg, conf=conf)
    _produce(stack, json_t, [js({"seq": 5, "note": "hello-json"}, _ctx(json_t))])
    ps = ck_proto.ProtobufSerializer(User, reg, {"use.deprecated.format": False, **conf})
    _produce(stack, proto_t, [ps(User(name="Ada", age=36), _ctx(proto_t))])
    return {"avro": avro_t, "json": json_t, "proto": proto_t}


def _records(client, topic, **params):
    r = client.get(f"/api/topics/{topic}/messages", params={"order": "oldest", **params})
    assert r.status_code == 200, r.text
    return r.json()["records"]


def test_messages_decoded_for_each_format(client, topics):
    avro = _records(client, topics["avro"])
    assert json.loads(avro[0]["value"]) == {"id": 1, "item": "apple"}
    assert json.loads(avro[1]["value"]) == {"id": 2, "item": "pear", "qty": 7}
    assert avro[0]["value_schema"]["type"] == "AVRO"
    assert avro[0]["value_schema"]["id"] != avro[1]["value_schema"]["id"]
    # not framed: shown as before, no note; unknown id: the bytes, with a note
    assert avro[2]["value"] == "plain text value" and avro[2]["value_schema"] is None
    assert avro[2]["value_note"] is None
    assert avro[3]["value_schema"] is None and "100000" in avro[3]["value_note"]
    assert avro[3]["value"].startswith("\x00") or avro[3]["value_binary"]
    js = _records(client, topics["json"])[0]
    assert js["value_schema"]["type"] == "JSON"
    assert json.loads(js["value"]) == {"seq": 5, "note": "hello-json"}
    pb = _records(client, topics["proto"])[0]
    assert pb["value_schema"]["type"] == "PROTOBUF"
    assert json.loads(pb["value"]) == {"name": "Ada", "age": 36}
    html = client.get(f"/topics/{topics['avro']}/messages", params={"order": "oldest"}).text
    assert "AVRO · id" in html and "not decoded" in html and "apple" in html


def test_record_page_decoded_and_notes(client, topics):
    t = topics["avro"]
    page = client.get(f"/topics/{t}/messages/0/1")
    assert page.status_code == 200
    assert "Decoded through the schema registry: AVRO" in page.text and "pear" in page.text
    api = client.get(f"/api/topics/{t}/messages/0/1").json()
    assert api["value"] == {"id": 2, "item": "pear", "qty": 7}
    hexed = client.get(f"/topics/{t}/messages/0/1", params={"view": "hex"}).text
    assert "00000000  00 00 00" in hexed          # the hex view keeps the bytes
    assert "Not registry-framed" in client.get(f"/topics/{t}/messages/0/2").text
    unknown = client.get(f"/topics/{t}/messages/0/3")
    assert unknown.status_code == 200 and "is not in the registry" in unknown.text
    pb = client.get(f"/api/topics/{topics['proto']}/messages/0/0").json()
    assert pb["value"] == {"name": "Ada", "age": 36}


def test_search_matches_decoded_text(client, topics):
    got = client.get(f"/api/topics/{topics['avro']}/messages",
                     params={"q": '"item":"pear"', "order": "oldest"}).json()
    assert [r["offset"] for r in got["records"]] == [1]
    got = client.get(f"/api/topics/{topics['proto']}/messages", params={"q": "Ada"}).json()
    assert [r["offset"] for r in got["records"]] == [0]
    got = client.get(f"/api/topics/{topics['avro']}/messages",
                     params={"q": "plain text"}).json()       # raw matching still works
    assert [r["offset"] for r in got["records"]] == [2]


def test_export_emits_decoded_values(client, topics):
    t = topics["avro"]
    lines = client.get(f"/topics/{t}/messages/export",
                       params={"format": "jsonl", "order": "oldest"}).text.splitlines()
    rows = [json.loads(x) for x in lines]
    assert rows[0]["value"] == {"id": 1, "item": "apple"}
    assert rows[0]["value_schema"]["type"] == "AVRO"
    assert rows[2]["value"] == "plain text value"
    body = client.get(f"/topics/{t}/messages/export",
                      params={"format": "csv", "order": "oldest"}).text
    cells = list(csv.DictReader(io.StringIO(body)))
    assert json.loads(cells[1]["value"]) == {"id": 2, "item": "pear", "qty": 7}


def test_schemas_list_and_subject_page(client, topics):
    listed = client.get("/api/schemas").json()
    by = {s["subject"]: s for s in listed["subjects"]}
    assert by[f"{topics['avro']}-value"]["version"] == 2
    assert by[f"{topics['avro']}-value"]["type"] == "AVRO"
    assert by[f"{topics['json']}-value"]["type"] == "JSON"
    assert by[f"{topics['proto']}-value"]["type"] == "PROTOBUF"
    assert listed["global_compatibility"] == "BACKWARD"
    assert "/schemas" in client.get("/").text        # in the nav bar
    html = client.get("/schemas").text
    assert f"{topics['avro']}-value" in html
    subject = f"{topics['avro']}-value"
    page = client.get(f"/api/schemas/{subject}").json()
    assert page["versions"] == [1, 2] and page["compatibility"] is None
    assert page["diff"]["a"]["version"] == 1 and page["diff"]["b"]["version"] == 2
    added = [r for r in page["diff"]["rows"] if r["tag"] in ("insert", "replace")]
    assert any(r["right"] and "qty" in r["right"] for r in added)
    html = client.get(f"/schemas/{subject}", params={"a": 1, "b": 2}).text
    assert 'id="schema-diff"' in html and "BACKWARD (global" in html
    assert client.get("/schemas/no-such-subject").status_code == 404


def test_subject_compatibility_level_and_check(client, stack, topics):
    subject = f"{topics['json']}-value"
    reg = ck_sr.SchemaRegistryClient({"url": stack.schema_registry_url})
    reg.set_compatibility(subject, "FULL")
    assert client.get(f"/api/schemas/{subject}").json()["compatibility"] == "FULL"
    subject = f"{topics['avro']}-value"
    bad = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
    r = client.post(f"/schemas/{subject}/check",
                    data={"schema": json.dumps(bad), "type": "AVRO", "csrf": csrf(client)})
    assert r.status_code == 200 and "Not compatible" in r.text
    api = client.post(f"/api/schemas/{subject}/check",
                      json={"schema": json.dumps(AVRO_V2), "type": "AVRO"},
                      headers={"x-csrf-token": csrf(client)}).json()
    assert api["check"]["is_compatible"] is True
    api = client.post(f"/api/schemas/{subject}/check",
                      json={"schema": json.dumps(bad), "type": "AVRO"},
                      headers={"x-csrf-token": csrf(client)}).json()
    assert api["check"]["is_compatible"] is False and api["check"]["messages"]


def test_without_registry_the_page_says_how(stack):
    settings = ConsoleSettings(bootstrap=stack.bootstrap_servers, request_timeout_s=5.0)
    with _client(create_app(settings, sample=False)) as c:
        r = c.get("/schemas")
        assert r.status_code == 200 and "--schema-registry" in r.text
        assert "GREGOR_SCHEMA_REGISTRY_URL" in r.text
        assert c.get("/api/schemas").json()["configured"] is False


def test_cli_option_reaches_the_settings(monkeypatch):
    from click.testing import CliRunner

    from gregor.cli import console as cli
    seen = {}

    def fake_create_app(settings, **kw):
        seen["settings"] = settings
        raise SystemExit(0)
    monkeypatch.setattr("gregor.console.app.create_app", fake_create_app)
    monkeypatch.setenv("GREGOR_SCHEMA_REGISTRY_URL", "http://127.0.0.1:1")
    CliRunner().invoke(cli.command, ["-b", "127.0.0.1:9", "--registry-property",
                                     "basic.auth.user.info=u:p"])
    assert seen["settings"].schema_registry_url == "http://127.0.0.1:1"
    assert seen["settings"].registry_config == {"basic.auth.user.info": "u:p"}
