"""One connection to each other broker, over the inter-broker listener, whose requests go one
at a time in the order they were made (the transaction marker channel and the share-state
persister rely on that order). A connection that fails is dropped; the next request to that
broker opens a new one, to wherever the broker is registered now."""
from __future__ import annotations

import asyncio

from ...protocol.errors import KafkaError

# what a request to another broker may fail with (the connection is dropped first)
FAILURES = (OSError, asyncio.TimeoutError, ConnectionError, KafkaError, LookupError)


class PeerConnections:
    def __init__(self, broker, client_id: str):
        self.broker = broker
        self.client_id = client_id                # "-<our broker id>" is appended
        self._conns: dict[int, tuple] = {}        # broker id -> (connection, lock, endpoint)

    async def request(self, broker_id: int, api, version: int, body: dict) -> dict:
        try:
            conn, lock = self._connection(broker_id)
            async with lock:
                return await conn.request(api, version, body)
        except FAILURES:
            self.drop(broker_id)
            raise

    def _connection(self, broker_id: int):
        member = self.broker.cluster
        info = member.snapshot.brokers.get(broker_id)
        endpoint = None if info is None else \
            info.endpoint(self.broker.listeners.inter_broker)
        if endpoint is None:
            raise LookupError(f"broker {broker_id} is not registered with the inter-broker "
                              "listener")
        held = self._conns.get(broker_id)
        if held is None or held[2] != endpoint:
            if held is not None:
                held[0].close()
            timeout = int(self.broker.config.get("request.timeout.ms")) / 1000.0
            conn = member.broker_connection(endpoint, f"{self.client_id}-{member.broker_id}",
                                            timeout)
            held = (conn, asyncio.Lock(), endpoint)
            self._conns[broker_id] = held
        return held[0], held[1]

    def drop(self, broker_id: int) -> None:
        held = self._conns.pop(broker_id, None)
        if held is not None:
            held[0].close()

    def close(self) -> None:
        for b in list(self._conns):
            self.drop(b)
