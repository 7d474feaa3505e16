"""The documentation stays true: README examples run, docs/ir.md lists every
primitive, the tour runs, and CI runs the README's commands.  (The examples
in docs/*.md run as doctests through pytest's --doctest-glob.)"""

import doctest
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from functrans.primitives import elementwise as ew

from functrans.core import Primitive, registry

ROOT = Path(__file__).resolve().parents[2]
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_examples_run():
    failed, attempted = doctest.testfile(
        str(ROOT / "README.md"), module_relative=False, optionflags=FLAGS
    )
    assert attempted > 0 and failed == 0


def test_ir_page_lists_every_primitive():
    page = (ROOT / "docs" / "ir.md").read_text()
    listed = set(re.findall(r"^\| `([a-z_0-9]+)` \|", page, flags=re.M))
    missing, unknown = set(registry) - listed, listed - set(registry)
    assert not missing, (
        f"docs/ir.md lacks {sorted(missing)}: run python docs/gen_ir_table.py --write"
    )
    assert not unknown, f"docs/ir.md lists unknown primitives {sorted(unknown)}"


def test_ir_page_tables_are_generated():
    gen = _load(ROOT / "docs" / "gen_ir_table.py")
    page = (ROOT / "docs" / "ir.md").read_text()
    assert gen.replace_block(page, gen.tables()) == page, (
        "docs/ir.md is out of date: run python docs/gen_ir_table.py --write"
    )


def test_ir_page_refuses_an_undescribed_primitive():
    """A primitive's text is the doc= of its declaration; only an elementwise
    row may go without, described by its NumPy function."""
    gen = _load(ROOT / "docs" / "gen_ir_table.py")
    Primitive("undescribed", abstract_eval=lambda x: x, impl=lambda x: x)
    ew.declare(ew.Row("undescribed_row", lambda x: x, ew.LINEAR, dtype_like=np.absolute))
    try:
        with pytest.raises(LookupError, match=r"^primitive 'undescribed' \(declared by "
                           r"test_docs\) has no description: add doc= to its declaration"):
            gen.tables()
        del registry["undescribed"]
        with pytest.raises(LookupError, match=r"^primitive 'undescribed_row' .* add a doc= "
                           "column to its table row"):
            gen.tables()
    finally:
        registry.pop("undescribed", None)
        registry.pop("undescribed_row", None)
    assert gen.meaning(registry["trunc"]) == "`np.trunc(x)`"
    assert gen.meaning(registry["select"]) == registry["select"].doc


def test_tour_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "functrans"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "{ lambda ; a:f64[3]. let" in proc.stdout
    assert "DIFFERS" not in proc.stdout and ": False" not in proc.stdout


def test_ci_runs_the_readme_commands():
    """.ci/run runs the README's two commands character for character, each
    as one shell command line (bash -c), as a newcomer pastes them."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Set up and run.*?```sh\n(.*?)```", readme, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    ci = (ROOT / ".ci" / "run").read_text()
    assigned = dict(re.findall(r'^(README_TOUR|README_TESTS)="(.*)"$', ci, flags=re.M))
    assert commands == [assigned["README_TOUR"], assigned["README_TESTS"]]
    assert 'bash -c "$README_TOUR"' in ci and 'bash -c "$README_TESTS"' in ci


def test_walkthrough_quotes_match_the_code():
    """Every block after ``<!-- quote: path -->`` appears verbatim in that file
    (a line ``...`` separates pieces, which must appear in order)."""
    page = (ROOT / "docs" / "walkthrough.md").read_text()
    quotes = re.findall(r"<!-- quote: (\S+) -->\n```python\n(.*?)```", page, flags=re.S)
    assert quotes
    for path, block in quotes:
        source = (ROOT / path).read_text()
        pos = 0
        for piece in re.split(r"^\.\.\.\n", block, flags=re.M):
            found = source.find(piece, pos)
            assert found >= 0, (
                f"docs/walkthrough.md quotes {path}, but this no longer appears there "
                f"(update the quote):\n{piece}"
            )
            pos = found + len(piece)


def test_api_coverage_page_is_generated():
    gen = _load(ROOT / "docs" / "gen_api_coverage.py")
    page = (ROOT / "docs" / "api_coverage.md").read_text()
    assert gen.page() == page, (
        "docs/api_coverage.md is out of date: run python docs/gen_api_coverage.py --write"
    )


def test_doctests_compare_numbers_exactly():
    # doctest's NUMBER option took 5. for a written 4. and -0. for 0., and
    # hid examples that printed what the library does not return.
    setting = re.search(r'^doctest_optionflags = "(.*)"$',
                        (ROOT / "pyproject.toml").read_text(), flags=re.M)
    flags = setting.group(1).split()
    assert "NUMBER" not in flags and set(flags) == {"NORMALIZE_WHITESPACE", "ELLIPSIS"}


@pytest.mark.parametrize("page", ["functional_updates.md", "optimizers.md", "optimize.md",
                                  "complex.md", "vmap.md"])
def test_pages_print_exactly_what_the_library_returns(page):
    if page == "optimize.md":
        pytest.importorskip("scipy", reason="docs/optimize.md hands derivatives to SciPy")
    failed, attempted = doctest.testfile(
        str(ROOT / "docs" / page), module_relative=False, optionflags=FLAGS
    )
    assert attempted > 0 and failed == 0
