import struct

import pytest

from gregor.log.index import IndexCorrupt, OffsetIndex, TimeIndex


def test_offset_index_lookup_truncate_and_reload(tmp_path):
    path = str(tmp_path / "0.index")
    idx = OffsetIndex(path)
    idx.open_for_append()
    for rel, pos in [(10, 100), (20, 250), (35, 400)]:
        idx.append(rel, pos)
    assert idx.lookup(5) == 0          # before the first entry: start of the segment
    assert idx.lookup(10) == 100
    assert idx.lookup(34) == 250
    assert idx.lookup(10_000) == 400
    assert idx.lookup_position(399) == 250
    assert idx.lookup_position(400) == 400
    with open(path, "rb") as f:
        assert f.read() == struct.pack("<IIIIII", 10, 100, 20, 250, 35, 400)

    idx.truncate_to_offset(20)          # batches starting at 20 and later are gone
    assert list(idx.rel_offsets) == [10]
    idx.append(21, 300)
    idx.close()

    again = OffsetIndex(path)
    again.load(log_size=301)
    assert list(again.rel_offsets) == [10, 21]
    assert list(again.positions) == [100, 300]


@pytest.mark.parametrize("content, log_size", [
    (b"\x01\x00\x00", 1000),                                          # partial entry
    (struct.pack("<IIII", 5, 100, 4, 200), 1000),                    # offsets not increasing
    (struct.pack("<IIII", 5, 100, 6, 100), 1000),                    # positions not increasing
    (struct.pack("<II", 5, 100), 100),                                # beyond the log
])
def test_offset_index_rejects_insane_files(tmp_path, content, log_size):
    path = tmp_path / "0.index"
    path.write_bytes(content)
    with pytest.raises(IndexCorrupt):
        OffsetIndex(str(path)).load(log_size)


def test_missing_index_is_corrupt(tmp_path):
    with pytest.raises(IndexCorrupt):
        OffsetIndex(str(tmp_path / "nope.index")).load(10)
    with pytest.raises(IndexCorrupt):
        TimeIndex(str(tmp_path / "nope.timeindex")).load(10)


def test_time_index_keeps_only_news_and_finds_a_safe_start(tmp_path):
    path = str(tmp_path / "0.timeindex")
    idx = TimeIndex(path)
    idx.open_for_append()
    idx.maybe_append(1000, 5)
    idx.maybe_append(1000, 9)           # same timestamp: nothing new
    idx.maybe_append(900, 12)           # older: nothing new
    idx.maybe_append(2000, 20)
    assert idx.timestamps == [1000, 2000]
    # every batch before relative offset 5 has max timestamp <= 1000
    assert idx.lookup(1000) == 0
    assert idx.lookup(1001) == 5
    assert idx.lookup(5000) == 20
    idx.truncate_to_offset(20)
    assert idx.rel_offsets == [5]
    idx.close()
    again = TimeIndex(path)
    again.load(max_rel_offset=5)
    assert (again.timestamps, again.rel_offsets) == ([1000], [5])
    with pytest.raises(IndexCorrupt):
        TimeIndex(path).load(max_rel_offset=4)
