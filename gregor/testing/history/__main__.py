"""python -m gregor.testing.history HISTORY.jsonl [--allow NAME ...] [--no-final-read]

Check a recorded history (JSON lines, from any Kafka cluster): prints the report's summary,
or the whole report with --json; exits 0 when the history is valid, 1 when it is not."""
from __future__ import annotations

import argparse
import json
import sys

from gregor.testing.history.checker import ANOMALIES, check
from gregor.testing.history.history import History
from gregor.testing.history.report import DEFAULT_ALLOWED


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gregor.testing.history",
                                 description=__doc__.split("\n\n")[1])
    ap.add_argument("history", help="a history as JSON lines (History.dump)")
    ap.add_argument("--allow", action="append", default=[], choices=ANOMALIES,
                    help="an anomaly that does not make the history invalid (repeatable)")
    ap.add_argument("--no-final-read", action="store_true",
                    help="the history has no final read: unseen values are not errors")
    ap.add_argument("--examples", type=int, default=2, help="examples shown per anomaly")
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = ap.parse_args(argv)
    report = check(History.load(args.history), allow=DEFAULT_ALLOWED | set(args.allow),
                   unseen_is_error=not args.no_final_read)
    if args.json:
        print(json.dumps(report.to_json(), indent=1, default=repr))
    else:
        print(report.summary(args.examples))
    return 0 if report.valid else 1


if __name__ == "__main__":
    sys.exit(main())
