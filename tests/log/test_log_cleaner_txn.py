"""The cleaner's transactional decisions without files, for any mix of transactions."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from gregor.log.cleaner.decide import Decider
from gregor.log.cleaner.offset_map import OffsetMap
from gregor.protocol.records.batch import decode_batch, encode_batch, encode_control_batch
from gregor.protocol.records.header import parse_header

KEYS = st.sampled_from([b"a", b"b", b"c"])
ops_st = st.lists(st.one_of(
    st.tuples(st.just("plain"), KEYS, st.binary(max_size=3)),
    st.tuples(st.just("txn"), st.sampled_from([1, 2]), KEYS, st.binary(max_size=3)),
    st.tuples(st.just("end"), st.sampled_from([1, 2]), st.booleans())), max_size=50)


def _log(ops):
    """[(bytes, header)], offset -> outcome, aborted (pid, first, marker), open txns."""
    batches, offset, open_txn, aborted, outcome = [], 0, {}, [], {}
    for op in ops:
        if op[0] == "plain":
            b = encode_batch([(1, op[1], op[2], None)], base_offset=offset)
            outcome[offset] = "committed"
        elif op[0] == "txn":
            pid = op[1]
            b = encode_batch([(1, op[2], op[3], None)], base_offset=offset, producer_id=pid,
                             producer_epoch=0, transactional=True)
            open_txn.setdefault(pid, []).append(offset)
            outcome[offset] = "open"
        else:
            pid, commit = op[1], op[2]
            if pid not in open_txn:
                continue
            b = encode_control_batch(commit, producer_id=pid, producer_epoch=0,
                                     base_offset=offset, timestamp_ms=1)
            firsts = open_txn.pop(pid)
            for o in firsts:
                outcome[o] = "committed" if commit else "aborted"
            if not commit:
                aborted.append((pid, firsts[0], offset))
        batches.append((b, parse_header(b)))
        offset += 1
    first_unstable = min((v[0] for v in open_txn.values()), default=offset)
    return batches, outcome, aborted, first_unstable


@settings(max_examples=200, deadline=None)
@given(ops=ops_st, past_horizon=st.booleans())
def test_aborted_records_go_and_never_shadow_committed_ones(ops, past_horizon):
    """Aborted records are removed and never hide an older committed value; markers stay
    within the delete horizon; an open transaction's records (past the first unstable
    offset, so past the map's end) stay as they are."""
    batches, outcome, aborted, first_unstable = _log(ops)
    m = OffsetMap(1 << 20)
    d = Decider(m, aborted)
    for b, h in batches:
        if h.base_offset >= first_unstable:
            break
        assert d.map_batch(b, 0, h)
    d.finish_mapping()
    records, markers = {}, 0
    for b, h in batches:
        k = d.filter_batch(b, 0, h, past_horizon)
        if k is None:
            continue
        if parse_header(k).is_control:
            markers += 1
            continue
        for r in decode_batch(k, 0):
            records[r.offset] = (r.key, r.value)
    written = {h.base_offset: (lambda r: (r.key, r.value))(decode_batch(b, 0).records[0])
               for b, h in batches if not h.is_control}
    latest = {}
    for o in sorted(written):
        if o < first_unstable and outcome[o] == "committed":
            latest[written[o][0]] = o
    assert {o for o in records if o < first_unstable} == set(latest.values())
    assert all(records[o] == written[o] for o in records)
    assert {o for o in written if o >= first_unstable} <= set(records)
    if not past_horizon:
        assert markers == sum(1 for _, h in batches if h.is_control)
