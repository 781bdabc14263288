"""Turning the authorizer on for a broker (`authorizer.class.name`), and off again.

    open_authorizer(broker)          # Broker.open(): single node loads acls.json now
    await start_authorizer(broker)   # Broker.start(): cluster loads ZooKeeper; both watch
    await stop_authorizer(broker)    # Broker.shutdown()

They set `broker.authorizer` (the decision engine, None when there is no authorizer: every
request allowed, as Kafka without an authorizer) and `broker.acl_service` (Create/Delete/
DescribeAcls over the store).
"""
from __future__ import annotations

import logging

from ..config import ConfigError
from .acl_store import AclService, FileAclStore
from .authorizer import AUTHORIZER_CLASS_NAMES, AclAuthorizer, parse_super_users

log = logging.getLogger("gregor.broker.security")


def authorizer_enabled(config) -> bool:
    name = (config.get("authorizer.class.name") or "").strip()
    if not name:
        return False
    if name not in AUTHORIZER_CLASS_NAMES:
        raise ConfigError(
            f"authorizer.class.name={name} is not an authorizer gregor provides; use "
            "kafka.security.authorizer.AclAuthorizer (or "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer, or "
            "gregor.broker.security.authorizer.AclAuthorizer: the same ACL authorizer), or "
            "leave it empty for no authorization")
    return True


def check_authorizer_config(config) -> None:
    """ConfigError naming what is wrong with the authorizer's settings (before start-up)."""
    if authorizer_enabled(config):
        try:
            parse_super_users(config.get("super.users"))
        except ValueError as e:
            raise ConfigError(f"super.users: {e} (semicolon-separated, e.g. "
                              "User:admin;User:broker)") from None


def open_authorizer(broker) -> None:
    broker.authorizer = None
    broker.acl_service = None
    if not authorizer_enabled(broker.config):
        return
    authorizer = AclAuthorizer.from_config(broker.config)
    if broker.cluster is not None:
        from .acl_store_zk import ZkAclStore
        store = ZkAclStore(broker.cluster.store)
    else:
        store = FileAclStore(broker.data_dir)
        authorizer.replace_all(store.load_now())
    broker.authorizer = authorizer
    broker.acl_service = AclService(authorizer, store)
    log.info("authorizer on: %d ACL(s), super.users=%s, allow.everyone.if.no.acl.found=%s",
             len(authorizer), ",".join(sorted(map(str, authorizer.super_users))) or "(none)",
             str(authorizer.allow_everyone).lower())


async def start_authorizer(broker) -> None:
    service = getattr(broker, "acl_service", None)
    if service is not None:
        await service.start()


async def stop_authorizer(broker) -> None:
    service = getattr(broker, "acl_service", None)
    if service is not None:
        await service.close()
