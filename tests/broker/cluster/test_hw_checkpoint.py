"""replication-offset-checkpoint: Kafka's text format, and bad files read as nothing."""
from gregor.broker.cluster import hw_checkpoint as hw


def test_round_trip_in_kafkas_format(tmp_path):
    hw.write(tmp_path, {("orders", 1): 42, ("orders", 0): 7, ("a b", 3): 0})
    text = (tmp_path / hw.FILE_NAME).read_text()
    assert text == "0\n3\na b 3 0\norders 0 7\norders 1 42\n"
    assert hw.read(tmp_path) == {("orders", 1): 42, ("orders", 0): 7, ("a b", 3): 0}


def test_missing_or_bad_files_give_nothing(tmp_path):
    assert hw.read(tmp_path) == {}
    for bad in ("", "1\n0\n", "0\n2\nt 0 1\n", "0\nx\n", "0\n1\nt zero 1\n"):
        (tmp_path / hw.FILE_NAME).write_text(bad)
        assert hw.read(tmp_path) == {}
