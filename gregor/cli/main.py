"""The `gregor` command. Each subcommand lives in its own module of gregor.cli and exposes a
click command (or group) named `command`; the modules are looked up here by name."""
from __future__ import annotations

import importlib

import click

SUBCOMMANDS = ["broker", "zookeeper", "cluster", "topics", "groups", "acls", "users", "quotas",
               "produce", "consume", "perf", "demo", "console", "registry", "schemas",
               "share-groups"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gregor")
def cli():
    """gregor: a Kafka-compatible streaming stack in Python."""


def _register() -> None:
    for name in SUBCOMMANDS:
        module = name.replace("-", "_")          # share-groups lives in share_groups.py
        try:
            mod = importlib.import_module(f"gregor.cli.{module}")
        except ModuleNotFoundError as e:
            if e.name == f"gregor.cli.{module}":
                continue  # not built yet
            raise
        cli.add_command(mod.command, name)


_register()


def main() -> None:
    cli(prog_name="gregor")


if __name__ == "__main__":
    main()
