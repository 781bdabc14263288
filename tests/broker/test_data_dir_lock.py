"""One broker per data directory (gregor/broker/data_dir_lock.py): the `.lock` Kafka takes,
held for the broker's life, released on exit, taken over after a kill -9."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading

import pytest

from gregor.broker.data_dir_lock import LOCK_FILE, DataDirectoryInUse, DataDirLock

START_TIMEOUT_S = 120     # a broker process's start on a loaded 2-core machine, with margin


def test_a_second_lock_on_the_directory_is_refused_and_names_the_holder(tmp_path):
    first = DataDirLock(tmp_path).acquire()
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
    with pytest.raises(DataDirectoryInUse) as refused:
        DataDirLock(tmp_path).acquire()       # same process, other open: refused too
    assert refused.value.pid == os.getpid()
    assert f"pid {os.getpid()}" in str(refused.value) and str(tmp_path) in str(refused.value)
    first.release()
    assert (tmp_path / LOCK_FILE).read_text() == ""
    DataDirLock(tmp_path).acquire().release()


def test_an_in_process_broker_refuses_a_directory_in_use(tmp_path):
    from gregor.testing import Broker
    with Broker(data_dir=tmp_path):
        second = Broker(data_dir=tmp_path)
        with pytest.raises(DataDirectoryInUse):
            second.start()
    with Broker(data_dir=tmp_path) as again:          # released by the clean stop
        assert again.running


class _BrokerProcess:
    def __init__(self, data_dir):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gregor", "broker", "--listen", "127.0.0.1:0",
             "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True)
        self.output: list[str] = []
        self.ready = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.output.append(line)
                if re.search(r"gregor broker ready on", line):
                    self.ready.set()
        self.pumper = threading.Thread(target=pump, daemon=True)
        self.pumper.start()

    def wait_ready(self):
        assert self.ready.wait(START_TIMEOUT_S), "".join(self.output)
        return self

    def wait_exit(self) -> int:
        code = self.proc.wait(START_TIMEOUT_S)
        self.pumper.join(START_TIMEOUT_S)
        return code

    def text(self) -> str:
        return "".join(self.output)


def test_a_second_broker_process_refuses_to_start_and_names_the_first(tmp_path):
    first = _BrokerProcess(tmp_path).wait_ready()
    try:
        second = _BrokerProcess(tmp_path)
        code = second.wait_exit()
        assert code != 0 and not second.ready.is_set(), second.text()
        assert f"in use by pid {first.proc.pid}" in second.text(), second.text()
        assert first.proc.poll() is None           # the first one serves on, untouched
    finally:
        first.proc.send_signal(signal.SIGTERM)
        assert first.wait_exit() == 0, first.text()
    assert (tmp_path / LOCK_FILE).read_text() == ""       # released at the clean exit


def test_the_next_start_takes_the_lock_over_after_kill_9(tmp_path):
    killed = _BrokerProcess(tmp_path).wait_ready()
    killed.proc.kill()
    killed.wait_exit()
    # the dead broker's pid is still in the file; the kernel released its lock
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(killed.proc.pid)
    after = _BrokerProcess(tmp_path).wait_ready()
    try:
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(after.proc.pid)
    finally:
        after.proc.send_signal(signal.SIGTERM)
        after.wait_exit()
