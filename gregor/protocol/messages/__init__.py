"""The registry of API descriptions: one module per API key, collected here."""
from __future__ import annotations

import importlib
import pkgutil

from ..schema import Api

APIS: dict[int, Api] = {}
BY_NAME: dict[str, Api] = {}


def _load() -> None:
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        api = getattr(mod, "API", None)
        if isinstance(api, Api):
            APIS[api.key] = api
            BY_NAME[api.name] = api


_load()


def api(key_or_name: int | str) -> Api:
    return APIS[key_or_name] if isinstance(key_or_name, int) else BY_NAME[key_or_name]
