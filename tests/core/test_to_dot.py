"""Pictures of programs: ``to_dot()`` with clusters for the programs of
control flow, constants and literals marked, params in the labels; and
``render`` through the optional graphviz package (core.jaxpr_to_dot,
core.render_dot).  tests/core/test_core.py checks the node and edge layout of a
straight-line program."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

W = np.array([1.0, 2.0])


def _program(x):
    def body(c, xi):
        return c * xi + W, c.sum()

    c, ys = lax.scan(body, x, np.ones((3, 2)))
    out = lax.cond(c.sum() > 0, lambda c: fnp.sin(c), lambda c: c * 2.0, c)
    n, out = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, out))
    return out, ys, n


def _nodes(dot):
    return re.findall(r"^\s*(\w+) \[label=\"((?:[^\"\\]|\\.)*)\", ([^\]]*)\];$", dot, re.M)


def test_control_flow_programs_are_clusters_beside_their_equation():
    dot = ft.make_jaxpr(_program)(np.ones(2)).to_dot()
    clusters = re.findall(r'subgraph (cluster_\d+) \{\n\s*label="([^"]*)"', dot)
    assert [title for _, title in clusters] == [
        "scan: jaxpr", "cond: branches[0]", "cond: branches[1]", "while_loop: body_jaxpr",
        "while_loop: cond_jaxpr"]
    # each cluster is joined to its equation by a dashed edge into the cluster
    for name, _ in clusters:
        assert re.search(rf"^\s*eqn\d+ -> s\d+_\w+ \[lhead={name}, style=dashed", dot, re.M)
    # the scan body's own equations are drawn inside its cluster, with their params
    scan_body = dot[dot.index("cluster_1 {"):dot.index("cluster_2 {")]
    assert 's1_eqn0 [label="mul\\nd:f64[2]", shape=box]' in scan_body
    assert 'label="reduce_sum[axes=(0,)]\\nf:f64[]"' in scan_body
    names = [n for n, _, _ in _nodes(dot)]
    assert len(names) == len(set(names)), "node names must be unique across clusters"
    edges = re.findall(r"^\s*(\w+) -> (\w+)[; ]", dot, re.M)
    assert all(a in names and b in names for a, b in edges)
    assert dot.count("{") == dot.count("}")


def test_labels_carry_params_and_mark_constants_and_literals():
    dot = ft.make_jaxpr(_program)(np.ones(2)).to_dot()
    nodes = {name: (label, attrs) for name, label, attrs in _nodes(dot)}
    consts = [(label, attrs) for name, (label, attrs) in nodes.items()
              if name.startswith("const_")]
    assert consts and all("shape=note" in a and "fillcolor=lightgrey" in a for _, a in consts)
    assert any(label.startswith("scan[length=3 num_carry=1 num_consts=1 reverse=False]")
               for label, _ in nodes.values())
    assert nodes["s2_lit0_1"] == ("2.0", "shape=plaintext")  # the literal of c * 2.0
    assert "jaxpr=" not in dot and "branches=" not in dot  # programs are drawn, not printed


def test_labels_are_escaped_and_shortened():
    tricky = ft.make_jaxpr(lambda x: ft.debug.print('say "hi"\\n {}', x) or x)(1.0).to_dot()
    label = next(label for name, label, _ in _nodes(tricky) if label.startswith("debug_print"))
    assert label.endswith("...\\n(no results)") and '\\"hi\\"' in label
    assert len(label) < 120


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot program")
def test_render_writes_svg_and_png(tmp_path):
    pytest.importorskip("graphviz")
    closed = ft.make_jaxpr(_program)(np.ones(2))
    svg = closed.render(str(tmp_path / "program.svg"))
    text = (tmp_path / "program.svg").read_text()
    assert svg.endswith("program.svg") and text.lstrip().startswith(("<?xml", "<svg"))
    assert "scan: jaxpr" in text and "cond: branches[1]" in text
    closed.jaxpr.render(str(tmp_path / "program.png"))
    assert (tmp_path / "program.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    closed.render(str(tmp_path / "no_suffix"), format="pdf")
    assert (tmp_path / "no_suffix").read_bytes()[:4] == b"%PDF"
    with pytest.raises(ValueError, match=r"use svg, png or pdf"):
        closed.render(str(tmp_path / "program.nope"))


def test_render_without_graphviz_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    closed = ft.make_jaxpr(lambda x: x * 2.0)(1.0)
    with pytest.raises(ImportError, match=r"draws with the graphviz package, which is not "
                       r"installed: pip install 'functrans\[graphviz\]' \(it needs Graphviz's "
                       r"dot program too"):
        closed.render(str(tmp_path / "p.svg"))
    assert closed.to_dot().startswith("digraph jaxpr {")  # the text needs neither


def test_render_without_the_dot_program_names_the_fix(tmp_path, monkeypatch):
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on PATH
    with pytest.raises(RuntimeError, match=r"Graphviz's dot program is not on PATH; install "
                       r"Graphviz \(apt-get install graphviz"):
        ft.make_jaxpr(lambda x: x * 2.0)(1.0).render(str(tmp_path / "p.svg"))
    assert not (tmp_path / "p.svg").exists()


def test_the_pictures_in_the_docs_are_current():
    """docs/pictures/*.svg are drawn from the DOT text recorded beside them;
    ``python docs/gen_pictures.py`` draws them again after a change."""
    path = Path(__file__).parent.parent.parent / "docs" / "gen_pictures.py"
    spec = importlib.util.spec_from_file_location("gen_pictures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
    for name in module.pictures():
        assert (module.HERE / f"{name}.svg").stat().st_size < 40_000
