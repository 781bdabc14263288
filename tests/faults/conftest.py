"""Fault-test fixtures: one broker per module, and the check that it is still alive and sane."""
from __future__ import annotations

import pytest

from tests.faults import frames
from tests.interop.targets import start_target


@pytest.fixture(scope="module")
def fault_broker(tmp_path_factory):
    """The broker under test (gregor by default; GREGOR_TEST_BROKER=tansu to debug a test)."""
    b = start_target(tmp_path_factory.mktemp("fault-broker") / "data")
    try:
        yield b
    finally:
        b.stop()


def assert_alive(b, corr: int = 4242) -> None:
    """The process runs and answers ApiVersions v0 on a fresh connection."""
    assert b.proc.poll() is None, (f"the broker died (exit {b.proc.returncode}); output:\n"
                                   f"{b.log_text()[-3000:]}")
    with frames.connect(b.port) as s:
        s.sendall(frames.api_versions_v0(corr))
        got_corr, body = frames.read_response(s)
    assert got_corr == corr
    assert body[:2] == b"\x00\x00", f"ApiVersions v0 error code {body[:2].hex()}"


def tracebacks(b) -> list[str]:
    """Python tracebacks in the broker's output: hostile input deserves one clear log line,
    never a stack trace."""
    text = b.log_text() if hasattr(b, "log_text") else ""
    blocks = text.split("Traceback (most recent call last):")[1:]
    return [blk[:1500] for blk in blocks]
