"""The share-group APIs at the versions Kafka 4.1/4.2 serve, beyond the reference schema files
(which stop at their early-access v0): fields per version as franz-go's kmsg definitions of
Kafka 4.2 list them, and a round trip of each version."""
import pytest

from gregor.protocol import messages

# name -> version -> (request fields, response fields), top level, wire order
EXPECTED = {
    "ShareFetch": {
        1: (["group_id", "member_id", "share_session_epoch", "max_wait_ms", "min_bytes",
             "max_bytes", "max_records", "batch_size", "topics", "forgotten_topics_data"],
            ["throttle_time_ms", "error_code", "error_message", "acquisition_lock_timeout_ms",
             "responses", "node_endpoints"]),
        2: (["group_id", "member_id", "share_session_epoch", "max_wait_ms", "min_bytes",
             "max_bytes", "max_records", "batch_size", "share_acquire_mode", "is_renew_ack",
             "topics", "forgotten_topics_data"],
            ["throttle_time_ms", "error_code", "error_message", "acquisition_lock_timeout_ms",
             "responses", "node_endpoints"]),
    },
    "ShareAcknowledge": {
        1: (["group_id", "member_id", "share_session_epoch", "topics"],
            ["throttle_time_ms", "error_code", "error_message", "responses", "node_endpoints"]),
        2: (["group_id", "member_id", "share_session_epoch", "is_renew_ack", "topics"],
            ["throttle_time_ms", "error_code", "error_message", "acquisition_lock_timeout_ms",
             "responses", "node_endpoints"]),
    },
    "ShareGroupHeartbeat": {
        1: (["group_id", "member_id", "member_epoch", "rack_id", "subscribed_topic_names"],
            ["throttle_time_ms", "error_code", "error_message", "member_id", "member_epoch",
             "heartbeat_interval_ms", "assignment"]),
    },
    "ShareGroupDescribe": {
        1: (["group_ids", "include_authorized_operations"], ["throttle_time_ms", "groups"]),
    },
    "DescribeShareGroupOffsets": {0: (["groups"], ["throttle_time_ms", "groups"])},
    "AlterShareGroupOffsets": {
        0: (["group_id", "topics"], ["throttle_time_ms", "error_code", "error_message",
                                     "responses"])},
    "DeleteShareGroupOffsets": {
        0: (["group_id", "topics"], ["throttle_time_ms", "error_code", "error_message",
                                     "responses"])},
}


def test_describe_share_group_offsets_partition_fields():
    api = messages.api("DescribeShareGroupOffsets")
    topic = api.response[1].fields[1]
    assert [f.name for f in topic.fields] == ["topic_name", "topic_id", "partitions"]
    assert [f.name for f in topic.fields[2].fields] == [
        "partition_index", "start_offset", "leader_epoch", "error_code", "error_message"]


def _names(fields, v):
    return [f.name for f in fields if f.versions[0] <= v <= f.versions[1]]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fields_per_version(name):
    api = messages.api(name)
    for v, (req, resp) in EXPECTED[name].items():
        assert api.supports(v) and api.is_flexible(v)
        assert _names(api.request, v) == req, (name, v)
        assert _names(api.response, v) == resp, (name, v)


def test_share_fetch_partition_max_bytes_is_v0_only():
    api = messages.api("ShareFetch")
    part = [f for f in api.request if f.name == "topics"][0].fields[1].fields
    assert _names(part, 0) == ["partition_index", "partition_max_bytes",
                               "acknowledgement_batches"]
    assert _names(part, 1) == ["partition_index", "acknowledgement_batches"]


def test_v2_round_trip():
    api = messages.api("ShareFetch")
    body = {"group_id": "g", "member_id": "m", "share_session_epoch": 3, "max_wait_ms": 5,
            "min_bytes": 1, "max_bytes": 100, "max_records": 7, "batch_size": 7,
            "share_acquire_mode": 1, "is_renew_ack": True,
            "topics": [{"topic_id": bytes(range(16)), "partitions": [
                {"partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": 1, "last_offset": 2, "acknowledge_types": [4]}]}]}],
            "forgotten_topics_data": []}
    codec = api.request_codec(2)
    back = codec.decode(codec.encode(body))
    assert back["share_acquire_mode"] == 1 and back["is_renew_ack"] is True
    assert back["topics"][0]["partitions"][0]["acknowledgement_batches"][0][
        "acknowledge_types"] == [4]


# The share coordinator's admin APIs (83, 86, 87): v0, the reference files' layout.
STATE_APIS = {
    "InitializeShareGroupState": (
        {"group_id": "g", "topics": [{"topic_id": bytes(range(16)), "partitions": [
            {"partition": 2, "state_epoch": 3, "start_offset": 40},
            {"partition": 5, "state_epoch": 1, "start_offset": -1}]}]},
        {"results": [{"topic_id": bytes(range(16)), "partitions": [
            {"partition": 2, "error_code": 0, "error_message": None},
            {"partition": 5, "error_code": 124, "error_message": "fenced"}]}]}),
    "DeleteShareGroupState": (
        {"group_id": "g", "topics": [{"topic_id": bytes(16), "partitions": [
            {"partition": 0}, {"partition": 7}]}]},
        {"results": [{"topic_id": bytes(16), "partitions": [
            {"partition": 0, "error_code": 16, "error_message": None}]}]}),
    "ReadShareGroupStateSummary": (
        {"group_id": "g", "topics": [{"topic_id": bytes(range(16)), "partitions": [
            {"partition": 1, "leader_epoch": -1}]}]},
        {"results": [{"topic_id": bytes(range(16)), "partitions": [
            {"partition": 1, "error_code": 0, "error_message": None, "state_epoch": 4,
             "start_offset": 123}]}]}),
}


@pytest.mark.parametrize("name", sorted(STATE_APIS))
def test_share_state_admin_apis_round_trip(name):
    api = messages.api(name)
    assert api.valid == (0, 0) and api.is_flexible(0)
    request, response = STATE_APIS[name]
    codec = api.request_codec(0)
    assert codec.decode(codec.encode(request)) == request
    codec = api.response_codec(0)
    assert codec.decode(codec.encode(response)) == response
