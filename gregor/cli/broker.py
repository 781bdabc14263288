"""`gregor broker`: run a Kafka-compatible broker.

    gregor broker --listen 127.0.0.1:9092 --data-dir ./data [--broker-id N]
                  [--config server.properties] [--set key=value ...] [--metrics-port P]

Prints `gregor broker ready on HOST:PORT` on stdout once it accepts connections. SIGTERM or
SIGINT stops it gracefully (finish in-flight requests, flush, clean-shutdown marker, exit 0).
With `--set zookeeper.connect=HOST:PORT/chroot` it joins a cluster (docs/cluster.md) and is
ready once registered in ZooKeeper; without it, it is a single node.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import sys

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--listen", metavar="HOST:PORT", default=None,
              help="Address of the first listener (port 0 picks a free port); other "
                   "listeners in the listeners setting are kept. Default: listeners "
                   "setting, 127.0.0.1:9092.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Directory for topic data (Kafka's log.dirs).")
@click.option("--broker-id", type=int, default=None, help="This broker's id (default 0).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              default=None, help="A Java properties file with Kafka setting names.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override one setting, e.g. --set num.partitions=3 (repeatable).")
@click.option("--metrics-port", type=int, default=None,
              help="Serve Prometheus metrics on 127.0.0.1:PORT (0 picks a free port).")
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
def command(listen, data_dir, broker_id, config_file, sets, metrics_port, log_level):
    """Run a Kafka-compatible broker."""
    from ..broker.config import BrokerConfig, ConfigError
    from ..broker.listeners import ListenerConfig, with_first_listener_at
    from ..broker.security.enable import check_authorizer_config
    from ..broker.security.listener_security import BrokerSecurity

    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options = {}
    if data_dir:
        options["log.dirs"] = data_dir
    if broker_id is not None:
        options["broker.id"] = broker_id
    try:
        config = BrokerConfig.load(config_file, sets, **options)
        if listen:
            config.set("listeners", with_first_listener_at(config.get("listeners"), listen))
        listeners = ListenerConfig.from_config(config)
        BrokerSecurity(config, listeners, credentials=None)     # TLS / SASL settings
        check_authorizer_config(config)                         # ACLs
        config.data_dir  # noqa: B018 - validates log.dirs
    except (ConfigError, OSError) as e:
        raise click.UsageError(str(e)) from None
    try:
        import uvloop
    except ImportError:
        uvloop = None
    runner = uvloop.run if uvloop is not None else asyncio.run
    code = runner(_serve(config, metrics_port))
    sys.exit(code)


async def _serve(config, metrics_port) -> int:
    from ..broker.broker import Broker

    log = logging.getLogger("gregor.broker")
    broker = Broker(config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        host, port = await broker.start(metrics_port)
    except Exception as e:
        log.error("broker failed to start: %s", e, exc_info=not isinstance(e, (OSError,
                                                                              RuntimeError)))
        return 1
    log.info("broker %d of cluster %s serving %d APIs", broker.broker_id, broker.cluster_id,
             len(broker.handlers))
    if len(broker.bound) > 1:
        for name, (l_host, l_port) in broker.bound.items():
            print(f"gregor broker listener {name} on {l_host}:{l_port}", flush=True)
    print(f"gregor broker ready on {host}:{port}", flush=True)
    registry = await _start_registry(broker, host, port, log)
    if registry is False:
        await broker.shutdown()
        return 1
    await stop.wait()
    if registry is not None:
        await registry.stop()
    await broker.shutdown()
    return 0


async def _start_registry(broker, host, port, log):
    """The embedded Schema Registry when schema.registry.listeners is set (None if not,
    False if it could not start)."""
    if not broker.config.get("schema.registry.listeners"):
        return None
    from ..registry.embedded import registry_for
    try:
        registry = registry_for(broker.config, host, port)
        await registry.start()
    except Exception as e:
        log.error("schema registry failed to start: %s", e)
        return False
    print(f"gregor schema registry ready on {registry.url}", flush=True)
    return registry
