"""gregor.testing.history.log_evidence: a duplicate whose copies share a producer id under
different epochs (librdkafka's re-send after an epoch bump) is told apart, from a real log."""
from __future__ import annotations

import time

import pytest

from gregor.log import Log, LogConfig
from gregor.testing.history import History
from gregor.testing.history.log_evidence import (EPOCH_BUMP, reclassify_duplicates,
                                                 writer_libraries)
from gregor.testing.history.report import Report
from tests.log.batches import make_batch

WRITER = 3          # the op index of the value's writer in the report's example


def _write(data_dir, batches) -> None:
    """(producer id, epoch, sequence) per batch, into partition t-0; each one record."""
    log = Log.open(str(data_dir / "t-0"), LogConfig.from_dict({"segment.bytes": 100_000}))
    now = int(time.time() * 1000)
    log.append(make_batch(1, tag=1, timestamp=now))                      # 0: another value
    for pid, epoch, seq in batches:
        log.append(bytearray(make_batch(1, producer_id=pid, producer_epoch=epoch,
                                        base_sequence=seq, tag=106, timestamp=now)))
    log.close()


def _report() -> Report:
    return Report({"duplicate": [{"key": "t/0", "value": 106, "offsets": [1, 2],
                                  "writer": WRITER}]})


def test_one_pid_two_epochs_from_librdkafka_is_an_epoch_bump_duplicate(tmp_path):
    _write(tmp_path / "b0", [(2004, 1, 0), (2004, 2, 0)])
    before = _report()
    assert not before.valid
    after = reclassify_duplicates(before, [tmp_path / "b0"], {WRITER: "confluent-kafka"})
    assert after.valid and after.anomalies["duplicate"] == []
    [ex] = after.anomalies[EPOCH_BUMP]
    assert ex["producers"] == {1: {"producer_id": 2004, "epoch": 1, "sequence": 0},
                               2: {"producer_id": 2004, "epoch": 2, "sequence": 0}}
    assert "#4953" in ex["explanation"]
    assert EPOCH_BUMP in str(after) and "(allowed)" in str(after)


@pytest.mark.parametrize("batches, library", [
    ([(2004, 1, 0), (2004, 1, 1)], "confluent-kafka"),     # one epoch: a broker duplicate
    ([(2004, 0, 0), (2005, 0, 0)], "confluent-kafka"),     # two producers
    ([(2004, 1, 0), (2004, 2, 0)], "kafka-python"),        # not librdkafka's behaviour
    ([(2004, 1, 0), (2004, 2, 0)], None),                  # writer unknown
], ids=["same-epoch", "different-pids", "other-client", "unknown-writer"])
def test_anything_else_stays_a_duplicate(tmp_path, batches, library):
    _write(tmp_path / "b0", batches)
    writers = {WRITER: library} if library else {}
    after = reclassify_duplicates(_report(), [tmp_path / "b0"], writers)
    assert not after.valid
    [ex] = after.anomalies["duplicate"]
    assert not after.anomalies.get(EPOCH_BUMP)
    assert {p["producer_id"] for p in ex["producers"].values()} == {b[0] for b in batches}


def test_offsets_no_replica_holds_stay_a_duplicate(tmp_path):
    _write(tmp_path / "b0", [(2004, 1, 0)])                      # offset 2 is not there
    after = reclassify_duplicates(_report(), [tmp_path / "b0"], {WRITER: "confluent-kafka"})
    assert not after.valid and "producers" not in after.anomalies["duplicate"][0]


def test_the_first_replica_holding_every_offset_is_read(tmp_path):
    _write(tmp_path / "b0", [(2004, 1, 0)])                      # a lagging replica
    _write(tmp_path / "b1", [(2004, 1, 0), (2004, 2, 0)])
    after = reclassify_duplicates(_report(), [tmp_path / "b0", tmp_path / "b1"],
                                  {WRITER: "confluent-kafka"})
    assert after.valid and len(after.anomalies[EPOCH_BUMP]) == 1


def test_writer_libraries_maps_op_indexes_through_processes():
    h = History()
    p1, p2 = h.new_process(), h.new_process()
    a = h.invoke(p1, "send", [["send", "t/0", 1]])
    b = h.invoke(p2, "send", [["send", "t/0", 2]])
    h.complete(a, "ok", [["send", "t/0", [0, 1]]])
    assert writer_libraries(h, {"confluent-kafka": {p1}, "kafka-python": {p2}}) == {
        a.index: "confluent-kafka", b.index: "kafka-python", a.index + 2: "confluent-kafka"}
