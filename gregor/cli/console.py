"""`gregor console`: the web console (gregor/console/), served by uvicorn.

    gregor console --bootstrap-server 127.0.0.1:9092
    gregor console --listen 0.0.0.0:8080 --token "$(openssl rand -hex 16)" --read-only
    gregor console -b broker1:9093 --command-config client.properties   # SASL_SSL, mTLS
    gregor console --schema-registry http://127.0.0.1:8081    # Schemas page, decoded values

Prints `gregor console ready on http://HOST:PORT` once it accepts connections. Binds to
127.0.0.1 unless told otherwise; see docs/console.md for running it safely.
"""
from __future__ import annotations

import os
import sys

import click

from .client_options import bootstrap_option, command_config, parse_props


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter(f"{value!r}: expected HOST:PORT, e.g. 127.0.0.1:8080",
                                 param_hint="--listen")
    return host.strip("[]") or "127.0.0.1", int(port)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@bootstrap_option
@click.option("--listen", default="127.0.0.1:8080", show_default=True, metavar="HOST:PORT",
              help="Where to serve (port 0 picks a free one). Anything but loopback exposes "
                   "the cluster: use --token.")
@click.option("--read-only", is_flag=True, help="Refuse every change (HTTP 403, no buttons).")
@click.option("--token", default=None, envvar="GREGOR_CONSOLE_TOKEN",
              help="Require this bearer token (or the login cookie set from it); also "
                   "$GREGOR_CONSOLE_TOKEN.")
@click.option("--metrics-url", default=None, metavar="URL",
              help="A gregor broker's Prometheus endpoint (its --metrics-port), for "
                   "partition sizes when DescribeLogDirs is not available.")
@click.option("--property", "-X", "props", multiple=True, metavar="KEY=VALUE",
              help="Client config for the console's clients (security.protocol, sasl.*, ...); "
                   "over --command-config's.")
@click.option("--lag-interval", type=float, default=5.0, show_default=True,
              help="Seconds between two lag samples.")
@click.option("--schema-registry", "registry_url", envvar="GREGOR_SCHEMA_REGISTRY_URL",
              default=None, metavar="URL",
              help="Schema Registry URL, for the Schemas page and for showing Confluent-framed "
                   "values decoded (env GREGOR_SCHEMA_REGISTRY_URL).")
@click.option("--registry-property", "registry_props", multiple=True, metavar="KEY=VALUE",
              help="Registry client config, e.g. basic.auth.user.info=user:pass, "
                   "ssl.ca.location=ca.pem.")
def command(bootstrap, listen, read_only, token, metrics_url, props, lag_interval,
            registry_url, registry_props):
    """Serve the web console for the cluster at --bootstrap-server."""
    try:
        import uvicorn

        from ..console import ConsoleSettings
        from ..console.app import create_app
        from ..console.security import LOOPBACK_HOSTS
    except ImportError as e:
        raise click.ClickException("the console needs its extra: "
                                   f"pip install 'gregor-kafka[console]' ({e})")
    host, port = _listen(listen)
    if token is not None and not token.strip():
        raise click.BadParameter("the token is empty", param_hint="--token")
    settings = ConsoleSettings(bootstrap=bootstrap, read_only=read_only, token=token,
                               metrics_url=metrics_url,
                               client_config={**command_config(), **parse_props(props)},
                               lag_interval_s=lag_interval,
                               schema_registry_url=registry_url or None,
                               registry_config=parse_props(registry_props,
                                                           "--registry-property"))
    loopback = host in LOOPBACK_HOSTS or host.startswith("127.")
    app = create_app(settings, allowed_hosts=(LOOPBACK_HOSTS | {host}) if loopback else None)
    if not loopback and not token:
        click.echo(f"warning: serving on {host} without --token: anyone who reaches this port "
                   "can read and change the cluster", err=True)

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            if self.started:
                bound = self.servers[0].sockets[0].getsockname()
                shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
                click.echo(f"gregor console ready on http://{shown}:{bound[1]}")

    # Searches and lag samples run on threads beside the event loop; a 1 ms GIL switch
    # interval (Python's default is 5 ms) lets a page's many short steps take turns with a
    # long scan quickly instead of waiting 5 ms at each one. This process serves only the
    # console, so the setting touches nothing else.
    sys.setswitchinterval(0.001)
    config = uvicorn.Config(app, host=host, port=port, log_level=os.environ.get(
        "GREGOR_CONSOLE_LOG_LEVEL", "warning"), access_log=False, lifespan="on",
        timeout_graceful_shutdown=2)
    Server(config).run()
