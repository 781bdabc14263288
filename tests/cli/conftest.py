"""Fixtures for CLI tests that talk to a broker (gregor by default; GREGOR_TEST_BROKER=tansu
runs them against tansu, see tests/interop/targets.py)."""
from __future__ import annotations

import pytest

from tests.interop.targets import start_target


@pytest.fixture(scope="module")
def cli_broker(tmp_path_factory):
    b = start_target(tmp_path_factory.mktemp("cli-broker") / "data")
    try:
        yield b
    finally:
        b.stop()
