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
        b.stop()
        assert_survived(b)


def assert_survived(b) -> None:
    # A broker that crashed mid-module shows up here with its output, not as a pile of
    # confusing client timeouts only.
    rc = getattr(b.proc, "returncode", None)
    if rc not in (0, None, -15) and hasattr(b, "log_text"):
        print(f"broker exited with {rc}; last output:\n{b.log_text()[-3000:]}")


@pytest.fixture
def topic_name(request):
    """A topic name unique in the session, readable in broker logs."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")
    return f"{base[:60]}-{next(_topic_seq)}"


def is_tansu() -> bool:
    return target_name() == "tansu"
