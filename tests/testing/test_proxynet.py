"""The proxy fallback's mapping of directed cuts onto proxies (no processes)."""
from __future__ import annotations

from gregor.testing.proxynet import ProxyNetwork, links_for_cut


def test_cuts_map_to_the_proxy_on_their_path():
    assert links_for_cut("n1", "zk") == ("zk", 1)
    assert links_for_cut("zk", "n2") == ("zk", 2)
    assert links_for_cut("n0", "n2") == ("broker", 2)       # n2's replication listener
    assert links_for_cut("c0", "n1") is None                 # clients reach brokers directly
    assert links_for_cut("ctl", "zk") is None


class FakeProxy:
    def __init__(self):
        self.mode = "pass"

    def blackhole(self):
        self.mode = "blackhole"

    def heal(self):
        self.mode = "pass"


class FakeCluster:
    zk_links = [FakeProxy() for _ in range(3)]
    broker_links = [FakeProxy() for _ in range(3)]


def test_a_proxy_stays_blackholed_until_every_cut_on_it_is_healed():
    c = FakeCluster()
    lines = []
    net = ProxyNetwork(c, ["zk", "n0", "n1", "n2", "c0", "ctl"], log=lines.append)
    net.isolate("n1", ["zk"])
    net.cut("n0", "n2")
    net.cut("n1", "n2")
    assert [p.mode for p in c.zk_links] == ["pass", "blackhole", "pass"]
    assert c.broker_links[2].mode == "blackhole"
    net.heal("n0", "n2")
    assert c.broker_links[2].mode == "blackhole"              # n1 -> n2 still cut
    net.heal()
    assert all(p.mode == "pass" for p in c.zk_links + c.broker_links)
    assert len(lines) == 1 and "two-way" in lines[0]          # said once
