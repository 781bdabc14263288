"""The optional compiled (Cython) modules: setup.py builds them when `make venv` installs
gregor; without a C compiler they are missing and the Python code they shadow runs instead,
only slower. GREGOR_PURE_PYTHON=1 in the environment ignores them (`make test` runs the
producer tests that way too, so the Python paths keep their own coverage)."""
from __future__ import annotations

import importlib
import os


def load(name: str):
    """The compiled module `name` (absolute), or None when it is not built or not wanted."""
    if os.environ.get("GREGOR_PURE_PYTHON"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
