"""`gregor registry`: Confluent's Schema Registry API on a Kafka cluster (gregor/registry/).

    gregor registry --bootstrap-server 127.0.0.1:9092 --listen 127.0.0.1:8081
    gregor registry -b broker:9093 --command-config client.properties   # SASL / TLS cluster
    gregor registry -b ... --users users.properties --tls-cert c.pem --tls-key k.pem

Prints `gregor schema registry ready on http://HOST:PORT` once it serves. State lives only
in the cluster's `_schemas` topic; several instances elect one writer (docs/schema-registry.md).
"""
from __future__ import annotations

import asyncio
import logging
import signal

import click

from .client_options import bootstrap_option, client_config, parse_props


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter(f"{value!r}: expected HOST:PORT, e.g. 127.0.0.1:8081",
                                 param_hint="--listen")
    return host.strip("[]") or "127.0.0.1", int(port)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@bootstrap_option
@click.option("--listen", default="127.0.0.1:8081", show_default=True, metavar="HOST:PORT",
              help="Where to serve the REST API (port 0 picks a free one).")
@click.option("--property", "-X", "props", multiple=True, metavar="KEY=VALUE",
              help="Client config for the registry's Kafka clients (security.protocol, "
                   "sasl.*, ssl.*); over --command-config's.")
@click.option("--advertised-url", default=None, metavar="URL",
              help="The URL other instances forward writes to (default: the bound one).")
@click.option("--follower-only", is_flag=True,
              help="Never become the writer (master_eligibility false); forward every write.")
@click.option("--users", "users_file", default=None, type=click.Path(dir_okay=False),
              help="Require HTTP basic auth; 'user: password[, role]' per line (role "
                   "readonly: reads only).")
@click.option("--tls-cert", default=None, type=click.Path(dir_okay=False),
              help="Serve HTTPS with this certificate (PEM, chain first).")
@click.option("--tls-key", default=None, type=click.Path(dir_okay=False),
              help="The certificate's private key (PEM), if not in --tls-cert.")
@click.option("--tls-client-ca", default=None, type=click.Path(dir_okay=False),
              help="Require client certificates signed by this CA (mTLS).")
@click.option("--replication-factor", type=int, default=None,
              help="For a new _schemas topic (default: min(3, brokers)).")
@click.option("--session-timeout-ms", type=int, default=10000, show_default=True,
              envvar="GREGOR_REGISTRY_SESSION_TIMEOUT_MS",
              help="How long the group waits for a silent instance before electing another "
                   "writer (heartbeats every third of it, at most 3 s).")
@click.option("--log-level", default="WARNING", show_default=True)
def command(bootstrap, listen, props, advertised_url, follower_only, users_file, tls_cert,
            tls_key, tls_client_ca, replication_factor, session_timeout_ms, log_level):
    """Serve Confluent's Schema Registry REST API, storing schemas in `_schemas`."""
    from ..registry.auth import AuthConfigError, load_users, server_tls_context
    from ..registry.server import SchemaRegistry
    from ..registry.store import StoreConfigError

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: "
                                                        "%(message)s")
    host, port = _listen(listen)
    try:
        users = load_users(users_file) if users_file else None
        ssl_context = server_tls_context(tls_cert, tls_key, tls_client_ca) if tls_cert else None
    except (OSError, AuthConfigError) as e:
        raise click.ClickException(str(e)) from None
    cfg = client_config(bootstrap, parse_props(props))
    registry = SchemaRegistry(cfg, host, port, ssl_context=ssl_context, users=users,
                              replication_factor=replication_factor,
                              leader_eligible=not follower_only, advertised_url=advertised_url,
                              election_settings={
                                  "session_timeout_ms": session_timeout_ms,
                                  "heartbeat_interval_ms": min(3000, session_timeout_ms // 3)})

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await registry.start()
        click.echo(f"gregor schema registry ready on {registry.url}")
        await stop.wait()
        await registry.stop()

    try:
        asyncio.run(main())
    except StoreConfigError as e:
        raise click.ClickException(str(e)) from None
