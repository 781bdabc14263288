"""`gregor produce` / `gregor consume` with --value-format avro|json|protobuf --schema FILE through
gregor's Schema Registry: JSON lines in, Confluent-framed records on the topic (which
confluent-kafka's AvroDeserializer reads), decoded JSON lines out."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gregor.cli.main import cli

pytestmark = pytest.mark.interop

ORDER = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
    {"name": "note", "type": ["null", "string"], "default": None}]}


@pytest.fixture(scope="module")
def registry_url(cli_broker):
    from gregor.registry.server import RegistryThread
    with RegistryThread({"bootstrap.servers": cli_broker.bootstrap}) as reg:
        yield reg.url


def run(args, input=None):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def test_avro_lines_in_and_out(cli_broker, registry_url, tmp_path):
    b = ["--bootstrap-server", cli_broker.bootstrap, "--schema-registry", registry_url]
    schema = tmp_path / "order.avsc"
    schema.write_text(json.dumps(ORDER))
    lines = [{"id": 1, "item": "tea", "note": None}, {"id": 2, "item": "café", "note": "x"}]
    out = run(["produce", "orders-cli", "--value-format", "avro", "--schema", str(schema),
               "--no-progress"] + b, "".join(json.dumps(v) + "\n" for v in lines))
    assert out.exit_code == 0, out.output
    got = run(["consume", "orders-cli", "--value-format", "avro", "--from-beginning",
               "--exit-at-end"] + b)
    assert got.exit_code == 0, got.output
    assert [json.loads(x) for x in got.output.splitlines() if x.startswith("{")] == lines
    # the bytes on the topic are what confluent-kafka's deserializer reads
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": cli_broker.bootstrap})
    c.assign([("orders-cli", 0, -2)])
    raw = []
    for _ in range(30):
        raw += c.poll(1.0)
        if len(raw) >= 2:
            break
    c.close()
    de = AvroDeserializer(ck_sr.SchemaRegistryClient({"url": registry_url}))
    ctx = SerializationContext("orders-cli", MessageField.VALUE)
    assert [de(r.value, ctx) for r in raw] == lines


def test_lines_that_break_the_schema_are_refused(cli_broker, registry_url, tmp_path):
    b = ["--bootstrap-server", cli_broker.bootstrap, "--schema-registry", registry_url]
    schema = tmp_path / "order.schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"id": {"type": "integer"}},
                                  "required": ["id"]}))
    out = run(["produce", "orders-json", "--value-format", "json", "--schema", str(schema),
               "--no-progress"] + b, '{"id": 1}\n{"id": "one"}\n')
    assert out.exit_code != 0
    assert "'one' is not of type 'integer'" in out.output
    out = run(["produce", "orders-json", "--value-format", "avro", "--no-progress"] + b, "{}\n")
    assert out.exit_code != 0 and "--schema FILE" in out.output


ORDER_PROTO = '''syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order { int64 id = 1; string item = 2; google.protobuf.Timestamp at = 3; }
message Refund { int64 order_id = 1; repeated string reasons = 2; }
'''


def _raw_values(bootstrap, topic, n):
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap})
    c.assign([(topic, 0, -2)])
    raw = []
    for _ in range(30):
        raw += c.poll(1.0)
        if len(raw) >= n:
            break
    c.close()
    return [r.value for r in raw]


@pytest.mark.parametrize("message_name, lines", [
    (None, [{"id": "1", "item": "tea", "at": "2024-01-02T03:04:05Z"}, {"id": "2"}]),
    ("Refund", [{"order_id": "7", "reasons": ["late", "cold"]}]),
    ("shop.Refund", [{"order_id": "8"}]),
])
def test_protobuf_lines_in_and_out(cli_broker, registry_url, tmp_path, message_name, lines):
    topic = f"orders-proto-{message_name or 'first'}".replace(".", "-")
    b = ["--bootstrap-server", cli_broker.bootstrap, "--schema-registry", registry_url]
    schema = tmp_path / "shop.proto"
    schema.write_text(ORDER_PROTO)
    extra = ["--message-name", message_name] if message_name else []
    out = run(["produce", topic, "--value-format", "protobuf", "--schema", str(schema),
               "--no-progress"] + extra + b, "".join(json.dumps(v) + "\n" for v in lines))
    assert out.exit_code == 0, out.output
    got = run(["consume", topic, "--value-format", "protobuf", "--from-beginning",
               "--exit-at-end"] + b)
    assert got.exit_code == 0, got.output
    assert [json.loads(x) for x in got.output.splitlines() if x.startswith("{")] == lines
    # confluent-kafka's ProtobufDeserializer reads the bytes with its own message class
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf import json_format
    from gregor.cli.protobuf_values import message_class
    cls = message_class(str(schema), message_name)
    de = ProtobufDeserializer(cls, {"use.deprecated.format": False},
                              ck_sr.SchemaRegistryClient({"url": registry_url}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    raw = _raw_values(cli_broker.bootstrap, topic, len(lines))
    assert [json_format.MessageToDict(de(v, ctx), preserving_proto_field_name=True)
            for v in raw] == lines
    # the index path names the message: [0] is the single byte 0, Refund is [1]
    # (count 1, index 1 as zigzag varints: 02 02)
    assert {v[5:6] if message_name is None else v[5:7] for v in raw} == (
        {b"\x00"} if message_name is None else {b"\x02\x02"})


def test_protobuf_unknown_message_name(cli_broker, registry_url, tmp_path):
    schema = tmp_path / "shop.proto"
    schema.write_text(ORDER_PROTO)
    out = run(["produce", "orders-proto-bad", "--value-format", "protobuf", "--schema",
               str(schema), "--message-name", "Nope", "--no-progress", "--bootstrap-server",
               cli_broker.bootstrap, "--schema-registry", registry_url], "{}\n")
    assert out.exit_code != 0
    assert "no message 'Nope'" in out.output and "Order, Refund" in out.output
