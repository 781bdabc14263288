"""gregor.serde: Confluent-framed Avro, JSON Schema and Protobuf serializers and
deserializers for gregor's Producer and Consumer (byte-compatible with confluent-kafka's), and
the Arrow codecs of the bulk paths. docs/serde.md."""
from .avro import AvroDeserializer, AvroSerializer
from .errors import NotFramedError, SerializationError, UnknownSchemaError
from .subjects import (SerializationContext, record_subject_name_strategy,
                       topic_record_subject_name_strategy, topic_subject_name_strategy)

__all__ = ["AvroSerializer", "AvroDeserializer", "SerializationError", "NotFramedError",
           "UnknownSchemaError", "SerializationContext", "topic_subject_name_strategy",
           "record_subject_name_strategy", "topic_record_subject_name_strategy"]


def __getattr__(name):
    # JSON Schema and Protobuf load their libraries only when asked for
    if name in ("JSONSerializer", "JSONDeserializer"):
        from . import json_schema
        return getattr(json_schema, name)
    if name in ("ProtobufSerializer", "ProtobufDeserializer"):
        from . import protobuf
        return getattr(protobuf, name)
    raise AttributeError(name)
