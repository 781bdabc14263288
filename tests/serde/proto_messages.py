"""Protobuf message classes for the serde tests, built from descriptors in code (no protoc):
test/common.proto (Tag) imported by test/user.proto (User, with a nested Address, a
Timestamp and a Tag), so serializers must register a reference and a well-known import."""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2  # noqa: F401 (puts timestamp.proto in the pool)

F = descriptor_pb2.FieldDescriptorProto


def _field(name, number, ftype, type_name=None, label=F.LABEL_OPTIONAL):
    f = F(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    return f


def _build():
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName("test/user.proto")
    except KeyError:
        common = descriptor_pb2.FileDescriptorProto(name="test/common.proto", package="test",
                                                    syntax="proto3")
        common.message_type.add(name="Tag").field.append(_field("label", 1, F.TYPE_STRING))
        pool.Add(common)
        user = descriptor_pb2.FileDescriptorProto(
            name="test/user.proto", package="test", syntax="proto3",
            dependency=["google/protobuf/timestamp.proto", "test/common.proto"])
        user.message_type.add(name="Other").field.append(_field("x", 1, F.TYPE_INT32))
        m = user.message_type.add(name="User")
        m.field.extend([_field("name", 1, F.TYPE_STRING), _field("age", 2, F.TYPE_INT32),
                        _field("at", 3, F.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
                        _field("tag", 4, F.TYPE_MESSAGE, ".test.Tag"),
                        _field("home", 5, F.TYPE_MESSAGE, ".test.User.Address")])
        m.nested_type.add(name="Address").field.append(_field("city", 1, F.TYPE_STRING))
        pool.Add(user)
    fd = pool.FindFileByName("test/user.proto")
    user = fd.message_types_by_name["User"]
    return (message_factory.GetMessageClass(user),
            message_factory.GetMessageClass(user.nested_types_by_name["Address"]))


User, Address = _build()
