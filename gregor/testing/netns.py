"""Network partitions on one machine: each node in a Linux network namespace of its own.

    with Network(["zk", "n0", "n1", "n2", "c0"]) as net:     # needs root and `ip`
        net.popen("zk", [...])                  # a process inside zk's namespace
        net.address("n0")                       # 10.213.2.2: where n0 listens and is reached
        net.cut("n0", "zk")                     # n0's packets to zk are dropped (one way)
        net.isolate("n0")                       # n0 cut from everyone, both ways
        net.heal()                              # every cut removed: stalled TCP resumes
        net.call("c0", fn)                      # fn runs on a thread inside c0's namespace

Layout: a router namespace with ip_forward on and one veth pair per node (node side
10.213.<i>.2/24, router side 10.213.<i>.1/24); each node routes 10.213.0.0/16 through its
router link and nothing else. No namespace has a link to the host, a default route or NAT,
so nothing a node sends can leave the private network. A cut is a policy rule in the router,
`ip rule add pref P from A to B blackhole`: the router silently drops A's packets to B, as
iptables DROP would, so established connections stall without a reset, new connects time out,
and everything resumes when the rule goes (heal). Both directions of a pair are separate cuts.

Names: every namespace starts with the run's prefix (`gjn` + 5 hex digits), and
/run/gregor-netns/<prefix> holds the owning process's pid, so `cleanup_stale()` can remove
leftovers of a run that was killed with no chance to clean up, and leave live runs alone.
close() (also on `with` exit, at interpreter exit and on SIGTERM/SIGHUP/SIGINT) kills the
processes still inside the namespaces and deletes them, which deletes their veths too.

The command lists are built by pure functions (setup_commands, cut_rule, ...), tested
without root; Network runs them through `ip -batch`.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from typing import Callable, Iterable

NAME_ROOT = "gjn"                  # every namespace this module creates starts with it
SUBNET = "10.213"                  # /16 used only inside the namespaces made here
FIRST_PREF = 1000                  # policy-rule preferences used for cuts (< main's 32766)
CLONE_NEWNET = 0x40000000


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no `ip`, or the kernel refuses)."""


# -- sans-I/O: names, addresses, commands ----------------------------------------------------

def new_prefix() -> str:
    return NAME_ROOT + secrets.token_hex(3)[:5]


def namespace(prefix: str, node: str) -> str:
    return f"{prefix}-{node}"


def router(prefix: str) -> str:
    return f"{prefix}-router"


def node_address(index: int, subnet: str = SUBNET) -> str:
    """Address of the index-th node (0-based): 10.213.<index+2>.2."""
    if not 0 <= index < 250:
        raise ValueError(f"node index {index} out of range (at most 250 nodes)")
    return f"{subnet}.{index + 2}.2"


def gateway_address(index: int, subnet: str = SUBNET) -> str:
    return f"{subnet}.{index + 2}.1"


def veth_names(prefix: str, index: int) -> tuple[str, str]:
    """(router side, node side): under 16 characters, unique per run."""
    return f"{prefix}r{index}", f"{prefix}n{index}"


def setup_commands(prefix: str, nodes: list[str],
                   subnet: str = SUBNET) -> list[tuple[str | None, list[str]]]:
    """(namespace or None for the caller's, `ip -batch` lines) steps, in order, that make the
    router, every node's namespace and their links."""
    r = router(prefix)
    here = [f"netns add {r}"] + [f"netns add {namespace(prefix, n)}" for n in nodes]
    in_router = ["link set lo up"]
    steps: list[tuple[str | None, list[str]]] = [(None, here), (r, in_router)]
    for i, node in enumerate(nodes):
        ns = namespace(prefix, node)
        rv, nv = veth_names(prefix, i)
        here.append(f"link add {rv} netns {r} type veth peer name {nv} netns {ns}")
        in_router += [f"addr add {gateway_address(i, subnet)}/24 dev {rv}",
                      f"link set {rv} up"]
        steps.append((ns, [
            "link set lo up",
            f"addr add {node_address(i, subnet)}/24 dev {nv}",
            f"link set {nv} up",
            f"route add {subnet}.0.0/16 via {gateway_address(i, subnet)}",
        ]))
    return steps


def forwarding_command(prefix: str) -> list[str]:
    """Turns on forwarding inside the router namespace only."""
    return ["ip", "netns", "exec", router(prefix), "sh", "-c",
            "echo 1 > /proc/sys/net/ipv4/ip_forward"]


def cut_rule(action: str, pref: int, src: str, dst: str) -> str:
    """`ip -batch` line adding or deleting the blackhole of src -> dst packets."""
    if action not in ("add", "del"):
        raise ValueError(f"action must be add or del, not {action!r}")
    ipaddress.ip_address(src)
    ipaddress.ip_address(dst)
    return f"rule {action} pref {pref} from {src}/32 to {dst}/32 blackhole"


def ours(name: str, prefix: str | None = None) -> bool:
    """Whether a namespace name was made by this module (by one run, when prefix is given)."""
    return name.startswith((prefix + "-") if prefix else NAME_ROOT)


# -- the network -----------------------------------------------------------------------------

_libc = None


def _setns(fd: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def _ip_batch(lines: list[str], *, netns: str | None = None, force: bool = False) -> None:
    cmd = ["ip"] + (["-n", netns] if netns else []) + (["-force"] if force else []) \
        + ["-batch", "-"]
    out = subprocess.run(cmd, input="\n".join(lines) + "\n", text=True,
                         capture_output=True, timeout=60)
    if out.returncode != 0 and not force:
        raise RuntimeError(f"ip -batch failed ({out.returncode}): {out.stderr.strip()}")


def list_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def namespace_pids(name: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True,
                         timeout=30)
    return [int(p) for p in out.stdout.split() if p.isdigit()]


def _kill_inside(names: Iterable[str]) -> None:
    me = os.getpid()
    for name in names:
        for pid in namespace_pids(name):
            if pid != me:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _delete(names: list[str]) -> None:
    if not names:
        return
    _kill_inside(names)
    _ip_batch([f"netns del {n}" for n in names], force=True)


OWNERS = "/run/gregor-netns"      # <prefix> files holding the pid of the run that owns it


def _owner_alive(prefix: str) -> bool:
    try:
        pid = int(open(os.path.join(OWNERS, prefix)).read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return pid != os.getpid() or any(net.prefix == prefix for net in _live)


def _prefix_of(name: str) -> str:
    return name.split("-", 1)[0]


def cleanup_stale(prefix: str | None = None) -> list[str]:
    """Delete the namespaces this module made whose run is gone (or one run's, given its
    prefix) and kill the processes left in them: what a run killed with SIGKILL leaves
    behind. Runs still alive (their owner file names a living process) are left alone.
    Returns the names deleted."""
    try:
        names = [n for n in list_namespaces() if ours(n, prefix)
                 and (prefix is not None or not _owner_alive(_prefix_of(n)))]
    except FileNotFoundError:
        return []
    _delete(names)
    for p in {_prefix_of(n) for n in names}:
        _unlink_owner(p)
    return names


def _unlink_owner(prefix: str) -> None:
    try:
        os.unlink(os.path.join(OWNERS, prefix))
    except OSError:
        pass


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here, or None (cheap checks only; Network.start()
    raises NetnsUnavailable when the kernel refuses anyway)."""
    if os.geteuid() != 0:
        return f"network namespaces need root (running as uid {os.geteuid()})"
    if shutil.which("ip", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
        return "the `ip` command (iproute2) is not installed"
    return None


_live: "set[Network]" = set()
_handlers_installed = False


def _close_all() -> None:
    for net in list(_live):
        net.close()


def _install_handlers() -> None:
    """Clean up at exit and on the usual termination signals (chaining earlier handlers)."""
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_close_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum, frame, previous=previous):
            _close_all()
            if callable(previous):
                previous(signum, frame)
            elif previous == signal.SIG_DFL:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
        signal.signal(sig, handler)


class Network:
    def __init__(self, nodes: Iterable[str], *, prefix: str | None = None,
                 subnet: str = SUBNET):
        self.nodes = list(nodes)
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError(f"node names must be unique: {self.nodes}")
        self.prefix = prefix or new_prefix()
        self.subnet = subnet
        self._index = {n: i for i, n in enumerate(self.nodes)}
        self._cuts: dict[tuple[str, str], int] = {}    # (src, dst) -> rule preference
        self._next_pref = FIRST_PREF
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen] = []
        self.started = False
        self.log: list[tuple[float, float, str]] = []  # (monotonic, wall, what) of each change

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> "Network":
        why = unavailable_reason()
        if why:
            raise NetnsUnavailable(why)
        _install_handlers()
        _live.add(self)
        self.started = True
        try:
            os.makedirs(OWNERS, mode=0o700, exist_ok=True)
            with open(os.path.join(OWNERS, self.prefix), "w") as f:
                f.write(str(os.getpid()))
            for netns, lines in setup_commands(self.prefix, self.nodes, self.subnet):
                _ip_batch(lines, netns=netns)
            subprocess.run(forwarding_command(self.prefix), check=True, timeout=30,
                           capture_output=True)
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            self.close()
            raise NetnsUnavailable(f"could not make network namespaces: {e}") from e
        return self

    def namespaces(self) -> list[str]:
        return [router(self.prefix)] + [namespace(self.prefix, n) for n in self.nodes]

    def close(self) -> None:
        """Kill what runs inside, delete every namespace (and so every veth) of this run."""
        if not self.started:
            return
        self.started = False
        _live.discard(self)
        for p in self._procs:
            if p.poll() is None:
                try:
                    p.kill()
                except OSError:
                    pass
        _delete(self.namespaces())
        _unlink_owner(self.prefix)
        for p in self._procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self) -> "Network":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- where things are --------------------------------------------------------------

    def address(self, node: str) -> str:
        return node_address(self._node(node), self.subnet)

    def namespace(self, node: str) -> str:
        self._node(node)
        return namespace(self.prefix, node)

    def _node(self, node: str) -> int:
        try:
            return self._index[node]
        except KeyError:
            raise ValueError(f"no node {node!r}; the nodes are {self.nodes}") from None

    def exec_prefix(self, node: str) -> list[str]:
        """Prefix of a command so it runs inside the node's namespace."""
        return ["ip", "netns", "exec", self.namespace(node)]

    def popen(self, node: str, cmd: list[str], **kwargs) -> subprocess.Popen:
        """A process inside the node's namespace (killed by close() if still running)."""
        p = subprocess.Popen(self.exec_prefix(node) + list(cmd), **kwargs)
        self._procs.append(p)
        return p

    def thread(self, node: str, target: Callable, *args, name: str | None = None,
               daemon: bool = True, **kwargs) -> threading.Thread:
        """A thread (not started) whose sockets, and those of threads and processes it starts,
        live in the node's namespace (Linux keeps a network namespace per thread)."""
        path = f"/run/netns/{self.namespace(node)}"

        def run():
            fd = os.open(path, os.O_RDONLY)
            try:
                _setns(fd)
            finally:
                os.close(fd)
            target(*args, **kwargs)
        return threading.Thread(target=run, name=name or f"netns-{node}", daemon=daemon)

    def call(self, node: str, fn: Callable, *args, **kwargs):
        """fn(*args, **kwargs) on a thread inside the node's namespace; its result."""
        box: dict = {}

        def run():
            try:
                box["value"] = fn(*args, **kwargs)
            except BaseException as e:           # re-raised in the caller
                box["error"] = e
        t = self.thread(node, run)
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        return box.get("value")

    # -- faults ------------------------------------------------------------------------

    def cut(self, src: str, dst: str) -> None:
        """Drop every packet src sends to dst (dst's packets to src still pass)."""
        if src == dst:
            raise ValueError("a node cannot be cut from itself")
        with self._lock:
            if (src, dst) in self._cuts:
                return
            pref = self._next_pref
            self._next_pref += 1
            _ip_batch([cut_rule("add", pref, self.address(src), self.address(dst))],
                      netns=router(self.prefix))
            self._cuts[(src, dst)] = pref
            self._note(f"cut {src}->{dst}")

    def cut_both(self, a: str, b: str) -> None:
        self.cut(a, b)
        self.cut(b, a)

    def isolate(self, node: str, from_nodes: Iterable[str] | None = None) -> None:
        """Cut node from each of from_nodes (default: every other node), both ways."""
        for other in (from_nodes if from_nodes is not None else self.nodes):
            if other != node:
                self.cut_both(node, other)

    def partition(self, *groups: Iterable[str]) -> None:
        """Cut every pair of nodes that are in different groups, both ways."""
        sets = [list(g) for g in groups]
        for i, a in enumerate(sets):
            for b in sets[i + 1:]:
                for x in a:
                    for y in b:
                        self.cut_both(x, y)

    def heal(self, src: str | None = None, dst: str | None = None) -> None:
        """Remove the cut src -> dst, or every cut when no pair is given."""
        with self._lock:
            pairs = [(s, d) for (s, d) in self._cuts
                     if (src is None or s == src) and (dst is None or d == dst)]
            if not pairs:
                return
            lines = [cut_rule("del", self._cuts[p], self.address(p[0]), self.address(p[1]))
                     for p in pairs]
            _ip_batch(lines, netns=router(self.prefix), force=True)
            for p in pairs:
                del self._cuts[p]
            self._note("heal " + ("all" if src is None and dst is None else f"{src}->{dst}"))

    @property
    def cuts(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._cuts)

    def _note(self, what: str) -> None:
        self.log.append((time.monotonic(), time.time(), what))

    def __repr__(self) -> str:
        return f"Network({self.prefix}, {self.nodes}, cuts={sorted(self._cuts)})"
