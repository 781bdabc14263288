"""Interop fixtures: one broker process per test module (gregor by default; see targets.py)."""
from __future__ import annotations

import itertools

import pytest

from tests.interop.targets import start_target, target_name

_topic_seq = itertools.count()


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """The broker under test, shared by every test in the module (distinct topics per test)."""
    b = start_target(tmp_path_factory.mktemp("interop-broker") / "data")
    try:
        yield b
    finally:
        rc = b.stop()
    if target_name() == "gregor":
        # SIGTERM is a graceful stop: exit 0 (a crash mid-module shows up here too)
        assert rc == 0, f"broker exit code {rc} on SIGTERM; output:\n{b.log_text()[-3000:]}"


@pytest.fixture
def topic_name(request):
    """A topic name unique in the session, readable in broker logs."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")
    return f"{base[:60]}-{next(_topic_seq)}"
