"""`python -m gregor.testing.child ARGS`: `gregor broker ARGS` with a control channel for
fault injection (control.py), what BrokerProcess runs.

The broker is the one `gregor broker` runs, through the same command line code (arguments,
signals, ready line, exit codes); the only addition is made once it has started: an
Interceptor on its server and the control listener, announced on stdout before the ready line.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time


def _die_with_parent() -> None:
    """A test process that dies (kill -9, a crashed pytest) leaves no broker behind: once
    this process's parent is gone (it was re-parented), it kills itself."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="gregor-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    from ..broker import broker as broker_module
    from . import control

    token = os.environ.pop(control.TOKEN_ENV, "")
    if not token:
        sys.exit(f"{control.TOKEN_ENV} is not set; BrokerProcess sets it")
    _die_with_parent()
    plain_start = broker_module.Broker.start

    async def start_with_control(self, *args, **kwargs):
        bound = await plain_start(self, *args, **kwargs)
        server = control.serve(self, token)
        print(f"{control.READY_PREFIX}{server.port}", flush=True)
        return bound

    broker_module.Broker.start = start_with_control
    from ..cli.main import cli
    cli(["broker", *(sys.argv[1:] if argv is None else argv)], prog_name="gregor")


if __name__ == "__main__":
    main()
