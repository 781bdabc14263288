"""docs/testing.md's examples run as tests: every ```python block of the page that defines a
test_ function (async ones run by pytest-asyncio) is written to a module and run by pytest
(with gregor's plugin, as a user's suite would have it), so the page cannot drift from what
works."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def example_blocks() -> list[str]:
    return [b for b in BLOCK.findall(DOC.read_text())
            if re.search(r"^(?:async )?def test_", b, re.M)]


def test_the_docs_examples_pass(tmp_path):
    blocks = example_blocks()
    assert len(blocks) >= 6, "docs/testing.md lost some of its examples"
    names = []
    for i, code in enumerate(blocks):
        (tmp_path / f"test_doc_example_{i}.py").write_text(code)
        names += re.findall(r"^(?:async )?def (test_\w+)", code, re.M)
    report = tmp_path / "report.xml"
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
         "ignore::DeprecationWarning", "-o", "gregor_require_zookeeper=true",
         f"--junitxml={report}", "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True, text=True, timeout=600, env=env, cwd=str(tmp_path))
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    cases = ET.parse(report).getroot().iter("testcase")
    outcome = {}
    for case in cases:
        kinds = {child.tag for child in case}
        outcome[case.get("name")] = ("failed" if kinds & {"failure", "error"} else
                                     "skipped" if "skipped" in kinds else "passed")
    assert sorted(outcome) == sorted(names), run.stdout[-3000:]
    problems = {n: o for n, o in outcome.items() if o != "passed"}
    # only the cluster example may skip, and only where ZooKeeper is missing (never in CI)
    from gregor.testing.zookeeper import missing_reason
    allowed = {"test_leader_failover_loses_nothing": "skipped"} if missing_reason() else {}
    assert problems == allowed, run.stdout[-6000:]
