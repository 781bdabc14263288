"""Options and error handling shared by the client commands (topics, produce, consume, perf)."""
from __future__ import annotations

import contextlib
import functools

import click

DEFAULT_BOOTSTRAP = "localhost:9092"


_COMMAND_CONFIG = "gregor.command_config"


def _load_command_config(ctx, param, value):
    if value:
        from ..broker.config import parse_properties
        try:
            with open(value, encoding="utf-8") as f:
                ctx.meta[_COMMAND_CONFIG] = parse_properties(f.read())
        except OSError as e:
            raise click.BadParameter(f"cannot read {value}: {e.strerror}") from None
    return value


_CONNECT_TIMEOUT = "gregor.connect_timeout"


def _keep_connect_timeout(ctx, param, value):
    if value is not None:
        ctx.meta[_CONNECT_TIMEOUT] = value
    return value


def command_config() -> dict:
    """The client settings of --command-config FILE and --connect-timeout (none without)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return {}
    out = dict(ctx.meta.get(_COMMAND_CONFIG, {}))
    seconds = ctx.meta.get(_CONNECT_TIMEOUT)
    if seconds is not None:
        out["gregor.bootstrap.timeout.ms"] = -1 if seconds < 0 else int(seconds * 1000)
    return out


def bootstrap_option(fn):
    """--bootstrap-server HOST:PORT[,HOST:PORT] (Kafka's tools spell it this way) and
    --command-config FILE (client settings in Kafka's properties format: security.protocol,
    sasl.*, ssl.*, as Kafka's tools take them), and --connect-timeout SECONDS."""
    fn = click.option(
        "--connect-timeout", type=float, default=None, metavar="SECONDS", expose_value=False,
        callback=_keep_connect_timeout,
        help="Give up after this long when no bootstrap server accepts a connection "
             "(default 5; -1 waits as Kafka's tools do). Only before the first connection: "
             "a broker restarting later is waited for.")(fn)
    fn = click.option(
        "--command-config", metavar="FILE", expose_value=False, callback=_load_command_config,
        type=click.Path(dir_okay=False), envvar="GREGOR_COMMAND_CONFIG",
        help="Client settings file, Kafka's properties format (security.protocol=SASL_SSL, "
             "sasl.mechanism, sasl.jaas.config or sasl.username/sasl.password, "
             "ssl.ca.location, ...); also $GREGOR_COMMAND_CONFIG.")(fn)
    return click.option(
        "--bootstrap-server", "-b", "bootstrap", metavar="HOST:PORT",
        default=DEFAULT_BOOTSTRAP, show_default=True, envvar="GREGOR_BOOTSTRAP_SERVER",
        help="Broker(s) to connect to (also $GREGOR_BOOTSTRAP_SERVER).")(fn)


def parse_props(items, what: str = "--property") -> dict:
    """['acks=all', 'linger.ms=5'] -> {'acks': 'all', 'linger.ms': '5'}."""
    out = {}
    for item in items or ():
        for part in ([item] if isinstance(item, str) else item):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise click.BadParameter(f"{part!r}: expected KEY=VALUE", param_hint=what)
            out[key.strip()] = value.strip()
    return out


def client_config(bootstrap: str, props: dict | None = None, **extra) -> dict:
    cfg = {"bootstrap.servers": bootstrap, "client.id": "gregor-cli"}
    cfg.update(command_config())
    cfg.update(extra)
    cfg.update(props or {})
    return cfg


@contextlib.contextmanager
def friendly_errors():
    """Turn client errors into a one-line message and exit code 1 instead of a traceback."""
    from ..client.errors import ClientError
    from ..protocol.errors import KafkaError

    try:
        yield
    except (KafkaError, ClientError, ConnectionError, TimeoutError, ValueError) as e:
        raise click.ClickException(str(e)) from e


def with_friendly_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with friendly_errors():
            return fn(*args, **kwargs)
    return wrapper


def load_producer_class():
    try:
        from ..client.producer import Producer
    except (ImportError, AttributeError) as e:
        raise click.ClickException(f"the gregor producer is not available in this build ({e})")
    return Producer
