"""The package layout (DESIGN.md, "Layers"): the repository folder
``primitives/`` installs as ``functrans.primitives``, so no top-level module
``primitives`` exists and a user's own ``primitives.py`` cannot shadow it;
every package folder is installed; importing functrans loads no optional
dependency.  The layer contract itself is checked by import-linter in CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, cwd: Path) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def test_a_users_primitives_module_does_not_shadow_functrans(tmp_path):
    (tmp_path / "primitives.py").write_text("raise ImportError('the user module was imported')\n")
    out = _run("import sys, functrans, functrans.numpy as fnp; "
               "print('primitives' in sys.modules, fnp.sum(fnp.ones(3)))", tmp_path)
    assert out.split() == ["False", "3.0"]


def test_importing_functrans_loads_no_optional_dependency(tmp_path):
    out = _run("import sys, functrans; print(sorted(m for m in ('cupy', 'scipy', 'numexpr', "
               "'hypothesis', 'numba', 'mpi4py', 'graphviz', 'pytest', 'ml_dtypes') "
               "if m in sys.modules))",
               tmp_path)
    assert out.strip() == "[]"


def test_every_package_folder_is_installed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    assert config["package-dir"] == {"functrans.primitives": "primitives"}
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "functrans").rglob("__init__.py")}
    found.add("functrans.primitives")
    assert found == listed, "update [tool.setuptools] packages in pyproject.toml"


def test_generated_elementwise_names_are_current():
    """Each elementwise row has its ``ew.<name>`` op and its NumPy names in
    ``functrans.numpy``; the lines are generated from the table."""
    from functrans.numpy import _generate_names

    stale = _generate_names.stale()
    assert not stale, f"{stale}: run python -m functrans.numpy._generate_names --write"


def test_generated_names_follow_numpy():
    import numpy as np
    from functrans.primitives import elementwise as ew

    import functrans.numpy as fnp
    from functrans.numpy import _generate_names

    for row in ew.UNARY + ew.BINARY:
        assert callable(getattr(ew, row.name + "_" * (row.name in ("not", "and", "or"))))
        if isinstance(row.numpy, np.ufunc):
            names = [row.numpy.__name__] + [n for n in _generate_names.ALIASES
                                            if getattr(np, n, None) is row.numpy]
            for name in names:
                assert callable(getattr(fnp, name)), name
    # Other libraries add to NumPy's namespace (numexpr sets numpy.expm1x); the
    # generated lines do not depend on them.
    assert "expm1x" not in _generate_names.ALIASES


def test_the_checkouts_functrans_finds_its_primitives():
    """``pip install . && python -m functrans`` from the repository root imports
    the checkout's ``functrans/`` (the current folder comes first), whose
    ``primitives`` lives at the top level: it must be mapped there, with no
    installer's finder to help (``-S``: no site hooks, no editable install)."""
    import numpy
    import optree

    paths = [str(ROOT)] + sorted({str(Path(m.__file__).resolve().parents[1])
                                  for m in (numpy, optree)})
    code = (f"import sys; sys.path[:0] = {paths!r}; import functrans, functrans.numpy as fnp; "
            "print(functrans.primitives.__file__, fnp.sum(fnp.ones(3)))")
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == [str(ROOT / "primitives" / "__init__.py"), "3.0"]
