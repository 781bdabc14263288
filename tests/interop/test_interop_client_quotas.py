"""DescribeClientQuotas / AlterClientQuotas v0 and v1 with kafka-python's codecs (generated
from Kafka's schemas, independently of ours): Kafka's admin tools' requests decode, and our
responses decode in theirs, the default entity (null name) included."""
from __future__ import annotations

import itertools

import pytest
from kafka.protocol.admin.client_quotas import (AlterClientQuotasRequest,
                                                AlterClientQuotasResponse,
                                                DescribeClientQuotasRequest,
                                                DescribeClientQuotasResponse)

from tests.faults import frames
from tests.support.broker import BrokerProcess

_corr = itertools.count(1)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("quota-apis") / "data") as b:
        yield b


def exchange(port: int, request, response_class, version: int):
    corr = next(_corr)
    request.with_header(correlation_id=corr, client_id="kafka-python-codec")
    with frames.connect(port) as s:
        s.sendall(bytes(request.encode(version=version, header=True, framed=True)))
        size = int.from_bytes(frames.recv_exact(s, 4), "big")
        data = frames.recv_exact(s, size)
    resp = response_class.decode(data, version=version, header=True)
    assert resp.header.correlation_id == corr
    return resp


@pytest.mark.parametrize("version", [0, 1])
def test_alter_and_describe_with_kafkas_codecs(broker, version):
    E = AlterClientQuotasRequest.EntryData
    user = f"user {version}"
    req = AlterClientQuotasRequest(version=version, validate_only=False, entries=[
        E(entity=[E.EntityData(entity_type="user", entity_name=user),
                  E.EntityData(entity_type="client-id", entity_name=None)],
          ops=[E.OpData(key="producer_byte_rate", value=2048.0, remove=False),
               E.OpData(key="request_percentage", value=33.5, remove=False)]),
        E(entity=[E.EntityData(entity_type="user", entity_name=user)],
          ops=[E.OpData(key="producer_byte_rate", value=-1.0, remove=False)]),
    ])
    resp = exchange(broker.port, req, AlterClientQuotasResponse, version)
    assert [e.error_code for e in resp.entries] == [0, 42]
    assert "must be greater than 0" in resp.entries[1].error_message
    assert [(d.entity_type, d.entity_name) for d in resp.entries[0].entity] == \
        [("user", user), ("client-id", None)]

    C = DescribeClientQuotasRequest.ComponentData
    req = DescribeClientQuotasRequest(version=version, strict=True, components=[
        C(entity_type="user", match_type=0, match=user),
        C(entity_type="client-id", match_type=1, match=None)])
    resp = exchange(broker.port, req, DescribeClientQuotasResponse, version)
    assert resp.error_code == 0 and len(resp.entries) == 1
    entry = resp.entries[0]
    assert sorted((d.entity_type, d.entity_name) for d in entry.entity) == \
        [("client-id", None), ("user", user)]
    assert {v.key: v.value for v in entry.values} == {"producer_byte_rate": 2048.0,
                                                       "request_percentage": 33.5}

    req = DescribeClientQuotasRequest(version=version, strict=False, components=[
        C(entity_type="ip", match_type=2, match=None),
        C(entity_type="user", match_type=2, match=None)])
    resp = exchange(broker.port, req, DescribeClientQuotasResponse, version)
    assert resp.error_code == 42 and resp.entries is None
