"""Workloads that record histories with real clients: one shape (shape.Workload), one thin
adapter per library. `workload("confluent-kafka", bootstrap, keys, history, ...)`."""
from __future__ import annotations

import importlib

from gregor.testing.history.workloads.shape import Client, Workload

CLIENTS = {
    "confluent-kafka": ("gregor.testing.history.workloads.confluent", "ConfluentClient"),
    "kafka-python": ("gregor.testing.history.workloads.kafka_python", "KafkaPythonClient"),
    "aiokafka": ("gregor.testing.history.workloads.aiokafka_client", "AiokafkaClient"),
    "gregor": ("gregor.testing.history.workloads.gregor_client", "GregorClient"),
}


def client_class(name: str) -> type[Client]:
    if name not in CLIENTS:
        raise ValueError(f"unknown client {name!r}; one of {', '.join(CLIENTS)}")
    module, cls = CLIENTS[name]
    return getattr(importlib.import_module(module), cls)


def workload(client: str, bootstrap: str, keys, history, **options) -> Workload:
    return Workload(client_class(client), bootstrap, keys, history, **options)


__all__ = ["CLIENTS", "Client", "Workload", "client_class", "workload"]
