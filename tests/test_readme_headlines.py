"""README's "How fast" table is what benchmarks/headlines.py renders from the saved benchmark
output in benchmarks/results/: editing the table, a results file or a row's pattern alone
fails here. Reads files only; no benchmark runs."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "headlines.py"


@pytest.fixture(scope="module")
def headlines():
    spec = importlib.util.spec_from_file_location("headlines", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["headlines"] = module     # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("headlines", None)


def test_readme_table_is_rendered_from_the_results(headlines):
    rendered = headlines.render()
    assert headlines.readme_table(headlines.README.read_text()) == rendered, (
        "README.md's How fast table differs from benchmarks/results/: run "
        ".venv/bin/python benchmarks/headlines.py")
    # every figure of every row comes from a results file the row links
    for row in headlines.ROWS:
        for label, values in headlines.figures(row, headlines.results_for(row)).items():
            assert values, (row.what, label)


def test_every_results_file_feeds_a_row(headlines):
    used = {r.path for row in headlines.ROWS for r in headlines.results_for(row)}
    unused = sorted(p.name for p in headlines.RESULTS.glob("*.txt") if p not in used)
    assert not unused, f"results files no README row reads: {unused}"


def test_a_two_number_pattern_gives_their_ratio(headlines, tmp_path):
    res = headlines.Result(tmp_path / "x.txt", {}, "p99 gregor vs other: 2.00 vs 8.00 ms\n")
    row = headlines.Row("p99", "other", "bench_x.py",
                        (("", r"^p99 gregor vs other: ([\d.]+) vs ([\d.]+) ms"),))
    assert headlines.figures(row, [res]) == {"": [0.25]}
