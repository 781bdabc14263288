"""gregor.testing.netns: the commands it builds (no root needed), and with root a real TCP
connection between two namespaces cut and healed, then nothing left behind."""
from __future__ import annotations

import os
import socket
import subprocess
import threading
import time

import pytest

from gregor.testing import netns


def test_setup_commands_build_router_links_and_routes_only_inside_the_namespaces():
    steps = netns.setup_commands("gjnabcde", ["zk", "n0"])
    here = steps[0]
    assert here[0] is None
    assert here[1][:3] == ["netns add gjnabcde-router", "netns add gjnabcde-zk",
                           "netns add gjnabcde-n0"]
    # veths are created straight into their namespaces: nothing appears in the caller's
    assert "link add gjnabcder0 netns gjnabcde-router type veth peer name gjnabcden0 " \
           "netns gjnabcde-zk" in here[1]
    by_ns = dict(steps[1:])
    assert "addr add 10.213.3.1/24 dev gjnabcder1" in by_ns["gjnabcde-router"]
    assert by_ns["gjnabcde-n0"] == ["link set lo up", "addr add 10.213.3.2/24 dev gjnabcden1",
                                     "link set gjnabcden1 up",
                                     "route add 10.213.0.0/16 via 10.213.3.1"]
    every = [line for _, lines in steps for line in lines]
    assert not any("default" in line or "nat" in line.lower() for line in every)
    assert all(len(name) <= 15 for name in netns.veth_names("gjnabcde", 249))


def test_cut_rules_are_directed_blackholes_and_refuse_bad_input():
    assert netns.cut_rule("add", 1001, "10.213.2.2", "10.213.3.2") == \
        "rule add pref 1001 from 10.213.2.2/32 to 10.213.3.2/32 blackhole"
    assert netns.cut_rule("del", 1001, "10.213.2.2", "10.213.3.2").startswith("rule del pref 1001")
    with pytest.raises(ValueError):
        netns.cut_rule("flush", 1, "10.213.2.2", "10.213.3.2")
    with pytest.raises(ValueError):
        netns.cut_rule("add", 1, "10.213.2.2; reboot", "10.213.3.2")


def test_names_carry_the_run_prefix():
    prefix = netns.new_prefix()
    assert prefix.startswith(netns.NAME_ROOT) and len(prefix) == 8
    assert netns.ours(netns.namespace(prefix, "n0"), prefix)
    assert netns.ours(netns.router(prefix))
    assert not netns.ours("gjnzzzzz-n0", prefix)
    assert not netns.ours("docker-ns")
    with pytest.raises(ValueError):
        netns.node_address(250)
    with pytest.raises(ValueError):
        netns.Network(["a", "a"])


def _require_namespaces():
    why = netns.unavailable_reason()
    if why:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"network namespaces are required under CI: {why}")
        pytest.skip(why)


def _leftovers(prefix: str) -> tuple[list[str], str]:
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    return [n for n in netns.list_namespaces() if n.startswith(prefix)], \
        "\n".join(line for line in links.splitlines() if prefix in line)


def test_a_cut_stalls_a_tcp_connection_and_the_heal_delivers_what_was_sent():
    _require_namespaces()
    net = netns.Network(["a", "b"]).start()
    try:
        target = (net.address("b"), 7000)
        listening = threading.Event()
        received: list[bytes] = []

        def server():
            with socket.create_server(target) as s:
                listening.set()
                conn, _ = s.accept()
                with conn:
                    while data := conn.recv(100):
                        received.append(data)
                        conn.sendall(data)
        t = net.thread("b", server)
        t.start()
        assert listening.wait(30)

        def client():
            out = {}
            with socket.create_connection(target, timeout=30) as c:
                c.sendall(b"before")
                out["before"] = c.recv(100)
                net.cut("a", "b")
                c.sendall(b"during")
                c.settimeout(1.0)
                try:
                    out["during"] = c.recv(100)
                except socket.timeout:
                    out["during"] = None            # stalled: no reset, no data
                out["cut_seen_by_server"] = list(received)
                net.heal()
                c.settimeout(30)
                out["after"] = c.recv(100)
            return out
        out = net.call("a", client)
        t.join(30)
        assert out["before"] == b"before"
        assert out["during"] is None
        assert out["cut_seen_by_server"] == [b"before"]
        assert out["after"] == b"during"
        assert [what for _, _, what in net.log] == ["cut a->b", "heal all"]
    finally:
        net.close()
    assert _leftovers(net.prefix) == ([], "")


def _eventually(check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_process_inside_a_namespace_cannot_reach_outside_and_dies_with_cleanup():
    _require_namespaces()
    with netns.Network(["a"]) as net:
        routes = subprocess.run(["ip", "-n", net.namespace("a"), "route"], capture_output=True,
                                text=True).stdout
        assert "default" not in routes
        sleeper = net.popen("a", ["sleep", "600"])
        # `ip netns exec` enters the namespace after the fork: until then the pid is outside.
        assert _eventually(lambda: sleeper.pid in netns.namespace_pids(net.namespace("a")))
        probe = net.popen("a", ["python3", "-c",
                                "import socket;socket.create_connection(('192.0.2.1',9),2)"],
                          stderr=subprocess.PIPE, text=True)
        assert probe.wait(30) != 0
        assert "unreachable" in probe.stderr.read().lower()
        prefix = net.prefix
    assert sleeper.poll() is not None
    assert _leftovers(prefix) == ([], "")


def test_cleanup_stale_removes_a_killed_runs_namespaces_and_processes_not_a_live_runs():
    _require_namespaces()
    live = netns.Network(["a"]).start()
    dead = netns.Network(["a"]).start()
    try:
        sleeper = dead.popen("a", ["sleep", "600"])
        assert _eventually(lambda: sleeper.pid in netns.namespace_pids(dead.namespace("a")))
        dead.started = False             # as if its run had been killed: nothing cleaned up
        netns._live.discard(dead)
        with open(os.path.join(netns.OWNERS, dead.prefix), "w") as f:
            f.write("999999999")         # an owner that no longer exists
        removed = netns.cleanup_stale()
        assert set(dead.namespaces()) <= set(removed)
        assert not set(live.namespaces()) & set(removed)
        assert sleeper.wait(60) == -9
        assert _leftovers(dead.prefix) == ([], "")
        assert set(live.namespaces()) <= set(netns.list_namespaces())
    finally:
        live.close()
    assert _leftovers(live.prefix) == ([], "")
