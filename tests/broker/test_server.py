"""The network layer in-process, with stand-in handlers: ordering, pipelining, limits and
hostile input."""
import asyncio
import struct

import pytest

from gregor.broker.metrics import BrokerMetrics
from gregor.broker.server import NO_RESPONSE, CloseConnection, Handler, Server
from gregor.protocol import messages
from gregor.protocol.header import decode_response, encode_request

API_VERSIONS = messages.api("ApiVersions")
METADATA = messages.api("Metadata")
PRODUCE = messages.api("Produce")


def _metadata_body(tag):
    return {"brokers": [], "cluster_id": tag, "controller_id": 0, "topics": []}


def make_server(**limits):
    def metadata(ctx, req):
        if not req["topics"]:
            return _metadata_body(f"fast{ctx.correlation_id}")
        # A response that waits, like a purgatory operation: the topic name is a delay in ms.
        delay = int(req["topics"][0]["name"])
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        loop.call_later(delay / 1000, fut.set_result, _metadata_body(f"slow{ctx.correlation_id}"))
        return fut

    def api_versions(ctx, req):
        return {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0,
                                               "max_version": 2}]}

    def produce(ctx, req):
        if req["acks"] == 0:
            if req["timeout_ms"] < 0:
                raise CloseConnection("test asked to close")
            return NO_RESPONSE
        return {"responses": []}

    handlers = {
        3: Handler(METADATA, 0, 8, metadata),
        18: Handler(API_VERSIONS, 0, 2, api_versions),
        0: Handler(PRODUCE, 3, 8, produce),
    }
    opts = dict(max_request_bytes=1 << 20, max_connections=100, max_in_flight=100,
                idle_timeout_s=600.0,
                unsupported_version_response=lambda: {"error_code": 35, "api_keys": [
                    {"api_key": 18, "min_version": 0, "max_version": 2}]})
    opts.update(limits)
    return Server(handlers, BrokerMetrics(), **opts)


async def open_conn(port):
    return await asyncio.open_connection("127.0.0.1", port)


async def read_response(reader, api, version):
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return decode_response(api, version, await reader.readexactly(size))


async def closed(reader, timeout=2.0):
    try:
        data = await asyncio.wait_for(reader.read(1), timeout)
    except (ConnectionResetError, asyncio.IncompleteReadError):
        return True
    except asyncio.TimeoutError:
        return False
    return data == b""


def run_with_server(scenario, loop_name="asyncio", **limits):
    """Run scenario(server, port) against a fresh server on stock asyncio or uvloop."""
    async def main():
        srv = make_server(**limits)
        _, port = await srv.start("127.0.0.1", 0)
        try:
            await scenario(srv, port)
        finally:
            srv.stop_accepting()
            await srv.close()
    if loop_name == "uvloop":
        import uvloop
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


def test_responses_keep_request_order_when_earlier_ones_wait():
    async def scenario(srv, port):
        reader, writer = await open_conn(port)
        # pipelined: a response delayed 200 ms, one delayed 50 ms, then two immediate ones
        frames = [encode_request(METADATA, 2, 1, "t", {"topics": [{"name": "200"}]}),
                  encode_request(METADATA, 2, 2, "t", {"topics": [{"name": "50"}]}),
                  encode_request(METADATA, 2, 3, "t", {"topics": []}),
                  encode_request(API_VERSIONS, 0, 4, "t", {})]
        writer.write(b"".join(frames))
        got = []
        for api, v in ((METADATA, 2), (METADATA, 2), (METADATA, 2), (API_VERSIONS, 0)):
            corr, body = await read_response(reader, api, v)
            got.append((corr, body.get("cluster_id")))
        assert got == [(1, "slow1"), (2, "slow2"), (3, "fast3"), (4, None)]
        writer.close()
    run_with_server(scenario)


def test_many_pipelined_requests_beyond_the_in_flight_cap():
    async def scenario(srv, port):
        reader, writer = await open_conn(port)
        n = 200      # more than max_in_flight: reading pauses and resumes, nothing is lost
        writer.write(b"".join(encode_request(METADATA, 1, i, "t", {"topics": [{"name": "1"}]})
                              for i in range(n)))
        corrs = [(await read_response(reader, METADATA, 1))[0] for _ in range(n)]
        assert corrs == list(range(n))
        writer.close()
    run_with_server(scenario, max_in_flight=8)


def test_acks0_style_no_response_and_close_after_earlier_responses():
    async def scenario(srv, port):
        reader, writer = await open_conn(port)
        body = {"transactional_id": None, "acks": 0, "timeout_ms": 1000, "topic_data": []}
        writer.write(encode_request(PRODUCE, 3, 1, "t", body))           # no response
        writer.write(encode_request(METADATA, 1, 2, "t", {"topics": [{"name": "100"}]}))
        writer.write(encode_request(PRODUCE, 3, 3, "t", dict(body, timeout_ms=-1)))  # close
        corr, _ = await read_response(reader, METADATA, 1)
        assert corr == 2                 # the response owed before the close still arrives
        assert await closed(reader)
    run_with_server(scenario)


def test_hostile_input_closes_only_that_connection():
    async def scenario(srv, port):
        cases = [
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",                        # HTTP on Kafka port
            struct.pack(">i", -5) + b"xxxx",                              # negative size
            struct.pack(">i", (1 << 20) + 1),                             # over the limit
            struct.pack(">i", 3) + b"\x00\x03\x00",                       # shorter than header
            encode_request(METADATA, 1, 1, "t", {"topics": []})[:4] + b"\x03\xe7" +
            encode_request(METADATA, 1, 1, "t", {"topics": []})[6:],     # unknown API key 999
            encode_request(PRODUCE, 8, 1, "t", {"acks": 1, "timeout_ms": 1,
                                                "topic_data": []})[:4] + b"\x00\x00\x00\x01" +
            encode_request(PRODUCE, 8, 1, "t", {"acks": 1, "timeout_ms": 1,
                                                "topic_data": []})[8:],  # Produce v1: unserved
            struct.pack(">i", 14) + struct.pack(">hhi", 3, 1, 1) + b"\x00\x05ab" + b"\xff\xff"
            + b"\x00\x00",                                                # truncated string
            struct.pack(">i", 18) + struct.pack(">hhi", 3, 1, 1) + b"\xff\xff"
            + b"\x7f\xff\xff\xff" + b"\x00\x00\x00\x00",                  # absurd array count
        ]
        for data in cases:
            reader, writer = await open_conn(port)
            writer.write(data)
            assert await closed(reader), data
            writer.close()
        # the server carries on
        reader, writer = await open_conn(port)
        writer.write(encode_request(METADATA, 1, 9, "t", {"topics": []}))
        assert (await read_response(reader, METADATA, 1))[0] == 9
        writer.close()
    run_with_server(scenario)


def test_unknown_api_versions_version_gets_error_35_in_v0_and_stays_open():
    async def scenario(srv, port):
        reader, writer = await open_conn(port)
        frame = bytearray(encode_request(API_VERSIONS, 0, 5, "t", {}))
        struct.pack_into(">h", frame, 6, 99)          # ApiVersions v99
        writer.write(bytes(frame))
        corr, body = await read_response(reader, API_VERSIONS, 0)
        assert corr == 5 and body["error_code"] == 35
        assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 2}]
        writer.write(encode_request(API_VERSIONS, 2, 6, "t", {}))
        corr, body = await read_response(reader, API_VERSIONS, 2)
        assert corr == 6 and body["error_code"] == 0
        writer.close()
    run_with_server(scenario)


def test_connection_cap():
    async def scenario(srv, port):
        conns = [await open_conn(port) for _ in range(2)]
        await asyncio.sleep(0.05)
        reader, writer = await open_conn(port)
        assert await closed(reader)
        conns[0][1].write(encode_request(API_VERSIONS, 0, 1, "t", {}))
        assert (await read_response(conns[0][0], API_VERSIONS, 0))[0] == 1
        for _, w in conns:
            w.close()
    run_with_server(scenario, max_connections=2)


def test_idle_connections_are_closed():
    async def scenario(srv, port):
        reader, writer = await open_conn(port)
        writer.write(encode_request(API_VERSIONS, 0, 1, "t", {}))
        await read_response(reader, API_VERSIONS, 0)
        assert await closed(reader, timeout=3.0)
        assert not srv.connections
    run_with_server(scenario, idle_timeout_s=0.2)


def test_frame_split_across_many_reads():
    async def scenario(srv, port):
        reader, writer = await open_conn(port)
        frame = encode_request(METADATA, 1, 77, "t", {"topics": []})
        for i in range(len(frame)):
            writer.write(frame[i:i + 1])
            await writer.drain()
            await asyncio.sleep(0)
        assert (await read_response(reader, METADATA, 1))[0] == 77
        writer.close()
    run_with_server(scenario)


def test_large_frames_in_pieces_followed_by_more_frames():
    async def scenario(srv, port):
        reader, writer = await open_conn(port)
        # a ~300 KB request (many topic names), sent in uneven pieces; the last piece also
        # carries the whole next request
        # (the stand-in handler reads the first topic name as a delay in ms)
        big = encode_request(METADATA, 1, 1, "t", {"topics": [{"name": "0"}] +
                                                  [{"name": "x" * 30} for _ in range(9000)]})
        assert len(big) > 256 * 1024
        small = encode_request(API_VERSIONS, 0, 2, "t", {})
        data = big + small
        cuts = [0, 3, 70_000, 70_001, 200_000, len(big) - 1, len(data)]
        for a, b in zip(cuts, cuts[1:]):
            writer.write(data[a:b])
            await writer.drain()
            await asyncio.sleep(0.01)
        assert (await read_response(reader, METADATA, 1))[0] == 1
        assert (await read_response(reader, API_VERSIONS, 0))[0] == 2
        writer.close()
    run_with_server(scenario)


def test_any_split_of_a_pipelined_stream_gives_every_response_in_order():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    # the stand-in handler reads the first topic name as a delay in ms; names after it pad
    frames = [encode_request(METADATA, 1, i, "t",
                             {"topics": [{"name": str(i % 2)}, {"name": "x" * (i * 37 % 200)}]
                              if i % 3 else []})
              for i in range(12)]
    frames[4] = encode_request(METADATA, 1, 4, "t", {"topics": [{"name": "0"}] + [
        {"name": "y" * 40}] * 2000})                 # one frame above the large-frame size
    stream = b"".join(frames)

    @settings(max_examples=25, deadline=None)
    @given(st.lists(st.integers(min_value=1, max_value=len(stream) - 1), max_size=12))
    def check(cuts):
        cuts = sorted(set(cuts))

        async def scenario(srv, port):
            reader, writer = await open_conn(port)
            for a, b in zip([0] + cuts, cuts + [len(stream)]):
                writer.write(stream[a:b])
                await writer.drain()
            corrs = [(await read_response(reader, METADATA, 1))[0] for _ in frames]
            assert corrs == list(range(12))
            writer.close()
        run_with_server(scenario)

    check()


def test_large_requests_share_a_memory_budget():
    async def scenario(srv, port):
        big = [encode_request(METADATA, 1, i, "t", {"topics": [{"name": "0"}] +
                                                    [{"name": "z" * 30} for _ in range(5000)]})
               for i in range(2)]
        assert 150_000 < len(big[0]) < 200_000           # two do not fit the 300 KB budget
        (r1, w1), (r2, w2) = await open_conn(port), await open_conn(port)
        w1.write(big[0][:100_000])
        await w1.drain()
        await asyncio.sleep(0.05)
        assert srv.buffered_bytes == len(big[0]) - 4
        w2.write(big[1][:100_000])                       # must wait for the first
        await w2.drain()
        await asyncio.sleep(0.05)
        assert len(srv.memory_waiters) == 1 and srv.buffered_bytes == len(big[0]) - 4
        w2.write(big[1][100_000:])
        w1.write(big[0][100_000:])
        assert (await read_response(r1, METADATA, 1))[0] == 0
        assert (await read_response(r2, METADATA, 1))[0] == 1
        assert srv.buffered_bytes == 0 and not srv.memory_waiters
        w1.close()
        w2.close()
    run_with_server(scenario, max_request_bytes=200_000, max_buffered_bytes=300_000)


def test_records_reach_the_handler_intact_whatever_the_reads():
    """Produce records arrive as views of received bytes (no copy): every split of the stream
    must give the handler the exact bytes, and views kept past later reads must not change."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    payloads = [bytes([i]) * n for i, n in enumerate((10, 70_000, 3, 300_000, 5000, 1))]
    frames = [encode_request(PRODUCE, 8, i, "t", {
        "transactional_id": None, "acks": 1, "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": p}]}]})
        for i, p in enumerate(payloads)]
    stream = b"".join(frames)

    @settings(max_examples=25, deadline=None)
    @given(st.lists(st.integers(min_value=1, max_value=len(stream) - 1), max_size=10))
    def check(cuts):
        cuts = sorted(set(cuts))
        kept = []

        def produce(ctx, req):
            kept.append(req["topic_data"][0]["partition_data"][0]["records"])
            return {"responses": []}

        async def scenario(srv, port):
            srv.handlers[0] = Handler(PRODUCE, 3, 8, produce)
            reader, writer = await open_conn(port)
            for a, b in zip([0] + cuts, cuts + [len(stream)]):
                writer.write(stream[a:b])
                await writer.drain()
            corrs = [(await read_response(reader, PRODUCE, 8))[0] for _ in frames]
            assert corrs == list(range(len(frames)))
            assert [bytes(r) for r in kept] == payloads
            writer.close()
        run_with_server(scenario)

    check()


# -- the receive path: a Connection with a stand-in transport (sans I/O), then real sockets ----

class FakeTransport:
    def __init__(self):
        self.written = bytearray()
        self.closed = False
        self.reading = True

    def get_extra_info(self, name, default=None):
        if name == "socket":
            return self.sock
        return ("127.0.0.1", 1) if name == "peername" else default

    def set_write_buffer_limits(self, high=None, low=None):
        pass

    def write(self, data):
        self.written += data

    def writelines(self, parts):
        for p in parts:
            self.written += p

    def pause_reading(self):
        self.reading = False

    def resume_reading(self):
        self.reading = True

    def close(self):
        self.closed = True

    abort = close


def fake_connection(sock=None, **limits):
    from gregor.broker.server import Connection
    conn = Connection(make_server(**limits))
    transport = FakeTransport()
    transport.sock = sock
    conn.connection_made(transport)
    return conn, transport


def feed(conn, data: bytes) -> None:
    """What a transport does: read into get_buffer()'s room, report with buffer_updated()."""
    while data and not conn.closed:
        room = conn.get_buffer(-1)
        n = min(len(room), len(data))
        room[:n] = data[:n]
        conn.buffer_updated(n)
        data = data[n:]


def responses(written: bytes, api, version):
    out, pos = [], 0
    while pos < len(written):
        size = struct.unpack_from(">i", written, pos)[0]
        out.append(decode_response(api, version, bytes(written[pos + 4:pos + 4 + size]))[0])
        pos += 4 + size
    return out


def test_receive_a_huge_declared_frame_holds_no_more_than_what_arrived():
    from gregor.broker.receive_buffer import MIN_CAPACITY
    huge = 100_000_000
    conn, transport = fake_connection(max_request_bytes=200_000_000)
    feed(conn, struct.pack(">i", huge) + b"\x00\x03\x00\x01\x00\x00")        # 10 bytes
    assert conn.rx.capacity <= MIN_CAPACITY and not transport.closed
    feed(conn, b"x" * 300_000)
    assert conn.rx.pending() == 300_010
    assert conn.rx.capacity <= 2 * conn.rx.pending()
    assert conn.server.buffered_bytes == huge             # budget accounting, not memory
    conn.connection_lost(None)                            # the peer goes away mid-frame
    assert conn.rx.capacity == 0 and conn.server.buffered_bytes == 0


def test_receive_a_large_frame_grows_to_what_waits_in_the_socket_at_once():
    import socket
    a, b = socket.socketpair()
    try:
        conn, transport = fake_connection(sock=a)
        frame = encode_request(PRODUCE, 8, 1, "t", {
            "transactional_id": None, "acks": 1, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0,
                                                             "records": b"r" * 600_000}]}]})
        first = conn.get_buffer(-1)
        n = len(first)
        b.sendall(frame[n:n + 200_000])       # arrived, not read yet
        assert conn._socket_waiting() == 200_000
        first[:] = frame[:n]
        conn.buffer_updated(n)
        conn.get_buffer(-1)                   # grows for what arrived: read + waiting
        # 2 x (64 KiB read + 200,000 waiting) holds frame/2, not yet the frame; counting the
        # read bytes alone would have allowed only frame/8
        assert conn.rx.capacity == (len(frame) + 1) // 2 <= 2 * (n + 200_000)
        assert conn.rx.moved == n
        conn.connection_lost(None)
        assert conn._socket_waiting() == 0    # the socket is no longer ours to ask
    finally:
        a.close()
        b.close()


def test_receive_a_huge_frame_over_the_limit_closes_before_buffering_it():
    from gregor.broker.receive_buffer import MIN_CAPACITY
    conn, transport = fake_connection()                   # max_request_bytes = 1 MiB
    feed(conn, struct.pack(">i", 100_000_000) + b"x" * 6)
    assert transport.closed and conn.closed
    assert conn.rx.capacity <= MIN_CAPACITY
    conn.connection_lost(None)
    assert conn.rx.capacity == 0


def _pipelined_stream():
    # answered at once (no topics), of varied sizes (client ids)
    frames = [encode_request(METADATA, 1, i, "c" * (i * 13), {"topics": []}) for i in range(6)]
    frames.insert(3, encode_request(PRODUCE, 8, 100, "t", {
        "transactional_id": None, "acks": 1, "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0,
                                                         "records": b"r" * 150_000}]}]}))
    return b"".join(frames), [0, 1, 2, 100, 3, 4, 5]


def _answered(transport):
    # Metadata v1 and Produce v8 responses both start with the correlation id after the size
    out, pos, w = [], 0, transport.written
    while pos < len(w):
        size, corr = struct.unpack_from(">ii", w, pos)
        out.append(corr)
        pos += 4 + size
    return out


def test_receive_many_frames_in_one_chunk_and_every_split_answer_alike():
    stream, corrs = _pipelined_stream()
    conn, transport = fake_connection()
    feed(conn, stream)                                    # as large reads as the buffer allows
    assert _answered(transport) == corrs
    # cut at every byte boundary of the small frames and around the large frame's edges
    small_end = stream.index(b"r" * 100)
    cuts = list(range(1, small_end)) + list(range(len(stream) - 600, len(stream)))
    for cut in cuts:
        conn, transport = fake_connection()
        feed(conn, stream[:cut])
        feed(conn, stream[cut:])
        assert _answered(transport) == corrs, cut
        assert not conn.closed


def test_receive_one_byte_at_a_time():
    stream, corrs = _pipelined_stream()
    conn, transport = fake_connection()
    for i in range(len(stream)):
        feed(conn, stream[i:i + 1])
    assert _answered(transport) == corrs


def test_receive_paused_for_the_queue_keeps_frames_and_resumes_in_order():
    async def main():
        stream = b"".join(encode_request(METADATA, 1, i, "t", {"topics": [{"name": "5"}]})
                          for i in range(40))
        conn, transport = fake_connection(max_in_flight=4)
        feed(conn, stream)                    # one read brings all 40; only 4 are taken
        assert not transport.reading and len(conn.pending) == 4
        assert conn.rx.pending() > 0
        for _ in range(200):
            if len(_answered(transport)) == 40:
                break
            await asyncio.sleep(0.01)
        assert _answered(transport) == list(range(40))
    asyncio.run(main())


async def _until(cond):
    for _ in range(500):            # waits for bytes to travel, asserts nothing about time
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_receive_over_sockets_huge_declared_frame_then_serving_others(loop_name):
    from gregor.broker.receive_buffer import MIN_CAPACITY

    async def scenario(srv, port):
        r1, w1 = await open_conn(port)
        w1.write(struct.pack(">i", 100_000_000) + b"\x00\x03\x00\x01\x00\x00")
        await _until(lambda: any(c.rx.pending() == 10 for c in srv.connections))
        (conn,) = srv.connections
        assert conn.rx.capacity <= MIN_CAPACITY
        w1.write(b"x" * 500_000)
        await _until(lambda: conn.rx.pending() == 500_010)
        assert conn.rx.capacity <= 2 * conn.rx.pending()
        w1.close()                                   # gone mid-frame
        await _until(lambda: not srv.connections)
        assert conn.rx.capacity == 0 and srv.buffered_bytes == 0
        r2, w2 = await open_conn(port)
        stream, corrs = _pipelined_stream()
        w2.write(stream)
        got = []
        for c in corrs:
            api, v = (PRODUCE, 8) if c == 100 else (METADATA, 1)
            got.append((await read_response(r2, api, v))[0])
        assert got == corrs
        w2.close()
    run_with_server(scenario, loop_name, max_request_bytes=200_000_000)


def test_responses_ready_together_leave_in_one_write():
    async def main():
        waiting = []

        def metadata(ctx, req):        # answered later, all at once (as by one fsync round)
            fut = asyncio.get_running_loop().create_future()
            waiting.append((fut, _metadata_body(str(ctx.correlation_id))))
            return fut
        from gregor.broker.server import Connection
        srv = make_server()
        srv.handlers[3] = Handler(METADATA, 0, 8, metadata)
        conn, transport = Connection(srv), FakeTransport()
        transport.sock = None
        conn.connection_made(transport)
        writes = []
        transport.write = lambda data: writes.append([data])
        transport.writelines = lambda parts: writes.append(list(parts))
        feed(conn, b"".join(encode_request(METADATA, 2, i, "t", {"topics": []})
                            for i in range(4)))
        assert len(waiting) == 4 and writes == []
        for fut, body in waiting:
            fut.set_result(body)
        await asyncio.sleep(0)
        assert len(writes) == 1
        assert responses(b"".join(writes[0]), METADATA, 2) == [0, 1, 2, 3]
    asyncio.run(main())


def test_a_broker_refusing_clients_closes_on_their_requests_but_takes_the_controllers():
    """While a cluster member is cut off (refuse_clients), every connection is closed and any
    request but the controller's (LeaderAndIsr, StopReplica, UpdateMetadata) closes its
    connection: the controller's word is what makes the broker current again."""
    update_metadata = messages.api("UpdateMetadata")
    told = []

    async def scenario(srv, port):
        srv.handlers[6] = Handler(update_metadata, 5, 8,
                                  lambda ctx, req: told.append(req) or {"error_code": 0})
        reader, writer = await open_conn(port)
        writer.write(encode_request(METADATA, 2, 1, "t", {"topics": []}))
        await read_response(reader, METADATA, 2)
        srv.refuse_clients("cut off")
        assert await closed(reader)                       # the open connection went
        reader, writer = await open_conn(port)
        writer.write(encode_request(METADATA, 2, 2, "t", {"topics": []}))
        assert await closed(reader)                       # a client's request: closed
        reader, writer = await open_conn(port)
        writer.write(encode_request(update_metadata, 8, 3, "controller", {
            "controller_id": 1, "controller_epoch": 2, "broker_epoch": -1,
            "topic_states": [], "live_brokers": []}))
        corr, body = await read_response(reader, update_metadata, 8)
        assert (corr, body["error_code"]) == (3, 0) and len(told) == 1
        srv.accept_clients()
        writer.write(encode_request(METADATA, 2, 4, "t", {"topics": []}))
        corr, _ = await read_response(reader, METADATA, 2)
        assert corr == 4
        writer.close()
    run_with_server(scenario)
