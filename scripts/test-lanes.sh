#!/usr/bin/env bash
# `make test`: the whole suite in two lanes at once, then the pure-Python run.
#
#   scripts/test-lanes.sh                 every test, two lanes in parallel
#   scripts/test-lanes.sh [pytest args]   one plain pytest run with those arguments
#
# Most of the suite's wall time is waiting (brokers starting, ZooKeeper sessions expiring,
# Spark's JVM, fault tests riding out timeouts), not CPU, so two lanes on these 2-core
# machines take little more than the longer lane. Lane A holds the cluster, fault and Jepsen
# tests (ZooKeeper, several broker processes); lane B everything else, Spark and interop
# included (measured: 24 and 31 min with benchmarks running beside; with interop in lane A,
# 31 and 25 min on a quiet machine, and a quota-rate interop test fell short beside the
# cluster tests). Each lane's output goes to a file and is printed whole when both are done,
# so the two never interleave. The last line adds the lanes up.
set -uo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
pytest=("$py" -m pytest -q -p no:cacheprovider)
# the slowest tests of each lane, printed so a lane that grows shows where
slowest=(--durations=15)

if [ $# -gt 0 ]; then
    exec "${pytest[@]}" "$@"
fi

lane_a=(tests/broker/cluster tests/faults tests/testing)
lane_b_ignore=()
for p in "${lane_a[@]}"; do lane_b_ignore+=("--ignore=$p"); done

logs=$(mktemp -d "${TMPDIR:-/tmp}/gregor-test-lanes.XXXXXX")
run_lane() {
    local name=$1; shift
    "${pytest[@]}" "$@" >"$logs/$name.out" 2>&1
    echo $? >"$logs/$name.rc"
}
start=$(date +%s)
run_lane a "${slowest[@]}" "${lane_a[@]}" &
run_lane b "${slowest[@]}" tests "${lane_b_ignore[@]}" &
wait
# The paths the compiled modules shadow, in pure Python (gregor/compiled.py).
GREGOR_PURE_PYTHON=1 run_lane pure tests/client/producer tests/protocol/records \
    tests/client/test_consumer_arrow.py tests/client/test_consumer_arrow_decode.py \
    tests/serde/test_avro_arrow.py tests/serde/test_avro_encode.py

status=0
for name in a b pure; do
    echo "==== lane $name: $(tail -n 1 "$logs/$name.out")"
    cat "$logs/$name.out"
    rc=$(cat "$logs/$name.rc")
    # 5: pytest collected nothing, which for a lane of this suite is a failure too
    [ "$rc" = 0 ] || status=1
done
echo "==== lanes took $(( $(date +%s) - start )) s"
# The closing line: every lane's counts added up.
"$py" - "$logs"/a.out "$logs"/b.out "$logs"/pure.out <<'EOF'
import re, sys
totals = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
for path in sys.argv[1:]:
    lines = [l for l in open(path, errors="replace").read().splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", last):
        totals["error" if word.startswith("error") else word] += int(n)
failed = totals["failed"] + totals["error"]
print(f"total: {totals['passed']} passed, {failed} failed, {totals['skipped']} skipped")
EOF
rm -rf "$logs"
exit $status
