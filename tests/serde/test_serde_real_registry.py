"""gregor.schema_registry and gregor.serde against gregor's own registry (RegistryThread on a
gregor broker), beside confluent-kafka's SchemaRegistryClient and serializers on the same
registry: ids, caches, typed errors, and each side reading the other's bytes."""
import json

import pytest

from gregor.registry.server import RegistryThread
from gregor.schema_registry import (IncompatibleSchemaError, Schema, SchemaNotFoundError,
                                    SchemaRegistryClient, SubjectNotFoundError)
from gregor.serde import AvroDeserializer, AvroSerializer

ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[avro,schemaregistry] is a test dependency")
from confluent_kafka.schema_registry.avro import (AvroDeserializer as CkDeserializer,  # noqa
                                                  AvroSerializer as CkSerializer)
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

V1 = json.dumps({"type": "record", "name": "P", "fields": [{"name": "a", "type": "int"}]})
V2 = json.dumps({"type": "record", "name": "P", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "x"}]})
BAD = json.dumps({"type": "record", "name": "P", "fields": [{"name": "c", "type": "int"}]})


@pytest.fixture(scope="module")
def registry_url(tmp_path_factory):
    from gregor.testing import Broker
    with Broker() as broker:
        with RegistryThread({"bootstrap.servers": broker.bootstrap_servers}) as reg:
            yield reg.url


def test_client_calls_against_the_registry(registry_url, request):
    subject = f"{request.node.name}-value"
    c = SchemaRegistryClient({"url": registry_url})
    sid = c.register_schema(subject, Schema(V1))
    assert c.register_schema(subject, Schema(V1)) == sid
    assert json.loads(c.get_schema(sid).schema_str) == json.loads(V1)
    assert c.lookup_schema(subject, Schema(V1)).version == 1
    sid2 = c.register_schema(subject, Schema(V2))
    assert c.get_latest_version(subject).schema_id == sid2
    assert c.get_versions(subject) == [1, 2]
    assert c.test_compatibility(subject, Schema(BAD)) is False
    with pytest.raises(IncompatibleSchemaError, match="incompatible"):
        c.register_schema(subject, Schema(BAD))
    with pytest.raises(SubjectNotFoundError):
        c.get_latest_version("no-such-subject")
    with pytest.raises(SchemaNotFoundError):
        c.get_schema(987654)
    # what confluent-kafka's own client sees
    ck = ck_sr.SchemaRegistryClient({"url": registry_url})
    assert ck.get_latest_version(subject).schema_id == sid2


def test_serde_both_ways_through_the_registry(registry_url, request):
    topic = request.node.name
    ours = SchemaRegistryClient({"url": registry_url})
    theirs = ck_sr.SchemaRegistryClient({"url": registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    a = AvroSerializer(ours, V1).serialize(topic, {"a": 1})
    b = CkSerializer(theirs, V2, conf={"subject.name.strategy":
                                       ck_sr.topic_subject_name_strategy})({"a": 2, "b": "y"},
                                                                           ctx)
    assert CkDeserializer(theirs)(a, ctx) == {"a": 1}
    latest = AvroDeserializer(ours, conf={"use.latest.version": True})
    assert [latest.deserialize(topic, v) for v in (a, b)] == [{"a": 1, "b": "x"},
                                                              {"a": 2, "b": "y"}]
