"""The blocking request API of NetworkClient, for the consumer and the admin client.

Each call sends its request(s) and drives NetworkClient.poll() in the caller's thread until the
answers arrive or the timeout passes. Mixed into NetworkClient (see network.py).
"""
from __future__ import annotations

from .errors import KafkaConnectionError, KafkaTimeoutError
from .metadata import Metadata


class BlockingRequests:
    def _await_ready(self, node_id: int | None, deadline: float) -> int:
        last_err = None
        while True:
            now = self.clock()
            node = self.least_loaded_node(now) if node_id is None else node_id
            if node is not None:
                c = self._conn(node)
                if c is None:
                    raise KafkaConnectionError(
                        f"node {node} is not in the cluster metadata; refresh metadata")
                if self.ready(node, now):
                    return node
                if c.state == "disconnected" and node_id is not None and c.failures:
                    last_err = f"last attempt to {c.host}:{c.port} failed"
            failed = self.authentication_failure(node_id) or self.unreachable_error(now)
            if failed is not None:
                raise failed       # TLS / SASL refused, or nothing ever listened: no retry helps
            if now >= deadline:
                where = "any broker" if node_id is None else f"node {node_id}"
                raise KafkaConnectionError(
                    f"could not connect to {where} in time"
                    + (f" ({last_err})" if last_err else "")
                    + f"; check bootstrap.servers={self.cfg['bootstrap.servers']} and that "
                      "the broker is running")
            wait = deadline - now
            delay = self.connection_delay(node, now) if node is not None else 0.0
            if node is None or (delay > 0 and c.state == "disconnected"):
                wait = min(wait, max(self.time_to_next_attempt(now), 0.001))
            elif delay > 0:
                wait = min(wait, delay)          # throttled by the broker's quota
            self._poll_internal(min(wait, 0.05))

    def authentication_failure(self, node_id: int | None = None):
        """The AuthenticationError of the node's last attempt (of any node's when None)."""
        conns = self._conns.values() if node_id is None else [self._conns.get(node_id)]
        for c in conns:
            if c is not None and c.auth_error is not None and c.state == "disconnected":
                return c.auth_error
        return None

    def _poll_internal(self, timeout):
        # Completions of user requests stay in their InFlightRequest objects.
        self.poll(timeout)

    def send_many(self, requests, timeout: float | None = None) -> list:
        """[(node_id_or_None, api_name, body, version_or_None)] sent in parallel; returns
        response bodies (or the exception each failed with), in order."""
        with self._lock:
            timeout = self.request_timeout if timeout is None else timeout
            deadline = self.clock() + timeout
            reqs = []
            for node_id, api_name, body, version in requests:
                try:
                    node = self._await_ready(node_id, deadline)
                    reqs.append(self.send(node, api_name, body, version,
                                          timeout=max(0.0, deadline - self.clock())))
                except Exception as e:
                    reqs.append(e)
            while True:
                pending = [r for r in reqs if not isinstance(r, Exception) and not r.done]
                if not pending:
                    break
                now = self.clock()
                if now >= deadline:
                    for r in pending:
                        self.disconnect(r.node_id)
                    break
                self._poll_internal(min(deadline - now, 0.5))
            out = []
            for r in reqs:
                if isinstance(r, Exception):
                    out.append(r)
                elif not r.done:
                    out.append(KafkaTimeoutError(
                        f"{r.api.name} request to node {r.node_id} got no answer in "
                        f"{timeout:.1f} s"))
                elif r.error is not None:
                    out.append(r.error)
                else:
                    out.append(r.body)
            return out

    def request(self, node_id: int | None, api_name: str, body: dict,
                version: int | None = None, timeout: float | None = None) -> dict:
        """Send one request and wait for its response body (see docs/CONTRACTS.md)."""
        res = self.send_many([(node_id, api_name, body, version)], timeout)[0]
        if isinstance(res, Exception):
            raise res
        return res

    def api_version(self, node_id: int | None, api_name: str,
                    timeout: float | None = None) -> int | None:
        """The negotiated version of api_name with node_id (connects if needed)."""
        with self._lock:
            timeout = self.request_timeout if timeout is None else timeout
            node = self._await_ready(node_id, self.clock() + timeout)
            return self.api_version_for(node, api_name)

    def refresh_metadata(self, topics=None, timeout: float | None = None) -> Metadata:
        """Fetch metadata now (blocking). topics=None asks for every topic."""
        with self._lock:
            if topics is not None:
                for t in topics:
                    self.metadata.add_topic(t)
            body_topics = None if topics is None else list(topics)
            timeout = self.request_timeout if timeout is None else timeout
            node = self._await_ready(None, self.clock() + timeout)
            version = self.api_version_for(node, "Metadata")
            if body_topics is None:
                tl = [] if version == 0 else None
            else:
                tl = [{"name": t} for t in body_topics]
            body = {"topics": tl,
                    "allow_auto_topic_creation": self.metadata.allow_auto_topic_creation}
            resp = self.request(node, "Metadata", body, version, timeout)
            self.metadata.update(resp, self.clock())
            return self.metadata

