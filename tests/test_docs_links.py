"""Every relative link in README.md, benchmarks/README.md and docs/ leads somewhere: the file
exists and, for a Markdown page, so does the heading its #anchor names (GitHub's anchors).
The README promises any figure or guarantee within two clicks; a renamed page or heading must
not quietly break that."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "benchmarks" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {anchor(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, re.M)}


def test_relative_links_lead_to_files_and_headings():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", link):
                continue                      # http(s), mailto: not ours to check
            path, _, name = link.partition("#")
            target = (page.parent / path) if path else page
            if not target.exists():
                broken.append(f"{page.relative_to(REPO)}: {link} (no such file)")
            elif name and target.suffix == ".md" and name not in anchors(target):
                broken.append(f"{page.relative_to(REPO)}: {link} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)
