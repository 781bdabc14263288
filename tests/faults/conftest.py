"""Fault-test fixtures: one broker per module, and the check that it is still alive and sane."""
from __future__ import annotations

import pytest

from tests.interop.targets import start_target


@pytest.fixture(scope="module")
def fault_broker(tmp_path_factory):
    """The broker under test (gregor by default; GREGOR_TEST_BROKER=tansu to debug a test)."""
    b = start_target(tmp_path_factory.mktemp("fault-broker") / "data")
    try:
        yield b
    finally:
        b.stop()
