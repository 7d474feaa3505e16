"""Docs hygiene: the pages are linked, "extended Rosenbrock" means one
function, prose carries no machine-specific timings (it points at the
benchmark command and its JSON instead), and ``python -m benchmarks --help``
reads as help."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
DOCS = ROOT / "docs"


@pytest.mark.parametrize("page", ["optimize.md", "debugging.md"])
def test_pages_are_linked_from_the_readme_and_the_contents(page):
    assert f"](docs/{page})" in (ROOT / "README.md").read_text()
    assert f"]({page})" in (DOCS / "index.md").read_text()


def _prose(text: str) -> str:
    """``text`` without its code blocks (doctest output is checked by running it)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def test_prose_has_no_timings_of_one_machine():
    timing = re.compile(r"\b\d+(\.\d+)? ?(ms|us|µs|ns)\b|\b\d+(\.\d+)? (s|seconds)\b "
                        r"|\b\d+(\.\d+)?x (faster|slower)|\b(three|two|ten) times faster")
    found = [(page.name, m.group(0)) for page in sorted(DOCS.glob("*.md"))
             for m in timing.finditer(_prose(page.read_text()))]
    found += [("README.md", m.group(0)) for m in timing.finditer(_prose(
        (ROOT / "README.md").read_text()))]
    assert not found, f"timings in prose (point at python -m benchmarks instead): {found}"


def test_extended_rosenbrock_is_the_separable_one_everywhere():
    """Chained: consecutive entries, SciPy's rosen.  Extended: disjoint pairs
    (More, Garbow and Hillstrom's problem 21); docs/optimize.md defines both."""
    chained = re.compile(r"x\[1:\] - x\[:-1\]")
    for path in [*DOCS.glob("*.md"), *DOCS.glob("*.py"), *(ROOT / "benchmarks").glob("*.py"),
                 ROOT / "functrans" / "__main__.py"]:
        text = path.read_text()
        for m in re.finditer(r"extended Rosenbrock", text, flags=re.I):
            nearby = text[max(0, m.start() - 400):m.end() + 400]
            assert not chained.search(nearby), (
                f"{path.relative_to(ROOT)} calls the chained form extended Rosenbrock")
    definitions = (DOCS / "optimize.md").read_text()
    assert "the **chained** Rosenbrock function" in definitions
    assert "the **extended** Rosenbrock function" in definitions


def test_benchmarks_help_reads_as_help():
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120).stdout
    assert "``" not in out and "[--no-peers]\n\n" not in out
    assert "Time functrans on its workloads" in out
    assert "topics, in the order they run: eager, tracing" in out
    assert "python -m benchmarks --only autodiff,jacobians" in out
    assert max(len(line) for line in out.splitlines()) <= 80
