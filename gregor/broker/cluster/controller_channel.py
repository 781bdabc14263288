"""The controller's requests to the brokers: one queue and one connection per live broker.

As Kafka's ControllerChannelManager: each broker gets the controller's LeaderAndIsr,
UpdateMetadata and StopReplica requests in the order they were planned, one at a time on its
own connection (the inter-broker listener); a request that cannot be delivered is retried
until it is, or until the broker is no longer live under the epoch it was meant for (a broker
that comes back is told everything again). The controller is one of the brokers too: its own
requests go through the same queue and the same handlers, but without the network (Kafka's
controller connects to itself), so a cut of its own listener does not cut it off from itself.
"""
from __future__ import annotations

import asyncio
import logging

from ...protocol import messages
from ...protocol.errors import ErrorCode, KafkaError
from .propagation import Push
from .broker_connection import BrokerConnection

log = logging.getLogger("gregor.broker.cluster.channel")

RETRY_FIRST_S = 0.05
RETRY_MAX_S = 1.0


class _BrokerQueue:
    def __init__(self, channel: "ControllerChannel", broker_id: int, epoch: int):
        self.channel = channel
        self.broker_id = broker_id
        self.epoch = epoch
        self.queue: asyncio.Queue[Push] = asyncio.Queue()
        self.queued = 0                  # requests put in the queue, ever
        self.delivered = 0               # and answered
        self.conn: BrokerConnection | None = None
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            push = await self.queue.get()
            delay = RETRY_FIRST_S
            while not await self._deliver(push):
                await asyncio.sleep(delay)
                delay = min(RETRY_MAX_S, delay * 2)
            self.delivered += 1

    async def _deliver(self, push: Push) -> bool:
        if self.broker_id == self.channel.self_id:
            body = await self.channel.local(push)
            return self._answered(push, body)
        endpoint = self.channel.endpoint_of(self.broker_id)
        if endpoint is None:
            return False
        if self.conn is None or (self.conn.host, self.conn.port) != endpoint:
            self.close_connection()
            self.conn = BrokerConnection(endpoint[0], endpoint[1], self.channel.client_id,
                                         self.channel.timeout, self.channel.security)
        try:
            body = await self.conn.request(messages.api(push.api), push.version, push.body)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError,
                KafkaError) as e:
            log.info("%s to broker %d not delivered (%s); retrying", push.api,
                     self.broker_id, e or type(e).__name__)
            self.close_connection()
            return False
        return self._answered(push, body)

    def _answered(self, push: Push, body: dict) -> bool:
        """False to send it again: STALE_CONTROLLER_EPOCH while we still act as controller
        means the broker has not read our election from ZooKeeper yet (if a newer
        controller exists, our own watch makes us step down, which ends this queue)."""
        code = body.get("error_code", 0)
        if code == ErrorCode.STALE_CONTROLLER_EPOCH:
            log.info("%s refused by broker %d as from a stale controller; asking again",
                     push.api, self.broker_id)
            return False
        self.channel.sent += 1
        if code:
            # STALE_BROKER_EPOCH: the broker came back under a new session and is told anew.
            log.warning("%s refused by broker %d: %s", push.api, self.broker_id,
                        ErrorCode(code).name)
        return True

    def close_connection(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def stop(self) -> None:
        self.task.cancel()
        self.close_connection()


class ControllerChannel:
    def __init__(self, self_id: int, local, endpoint_of, client_id: str, timeout: float,
                 security=None):
        self.self_id = self_id
        self.security = security                # InterBrokerSecurity (None: PLAINTEXT)
        self.local = local                      # async push -> response body, for self_id
        self.endpoint_of = endpoint_of          # broker id -> (host, port) or None
        self.client_id = client_id
        self.timeout = timeout
        self.queues: dict[int, _BrokerQueue] = {}
        self.sent = 0                           # delivered requests, for tests and logs

    def sync(self, epochs: dict[int, int]) -> None:
        """Keep a queue for each live broker at its current epoch; drop the others with
        whatever they still held."""
        for b, q in list(self.queues.items()):
            if epochs.get(b) != q.epoch:
                q.stop()
                del self.queues[b]
        for b, epoch in epochs.items():
            if b not in self.queues:
                self.queues[b] = _BrokerQueue(self, b, epoch)

    def send(self, pushes: list[Push]) -> None:
        for push in pushes:
            q = self.queues.get(push.broker_id)
            if q is not None and q.epoch == push.broker_epoch:
                q.queue.put_nowait(push)
                q.queued += 1

    async def delivered(self, timeout_s: float) -> bool:
        """Until every live broker has taken what was queued for it so far (a broker that
        dies meanwhile no longer counts), or the timeout passed."""
        targets = {b: (q, q.queued) for b, q in self.queues.items()}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_s)
        while any(self.queues.get(b) is q and q.delivered < n for b, (q, n) in targets.items()):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    def close(self) -> None:
        for q in self.queues.values():
            q.stop()
        self.queues.clear()
