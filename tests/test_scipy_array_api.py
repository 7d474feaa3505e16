"""SciPy's array API functions through functrans (docs/array_api.md).

SciPy reads ``SCIPY_ARRAY_API=1`` once, when it is first imported, so the
functions run in one child process with it set (the other tests keep their
SciPy).  There each function that works is differentiated with ``grad``
(against central differences of SciPy's own NumPy evaluation), run under
``jit`` (against SciPy's value) and under ``vmap(grad)`` (against the
gradients one at a time); each that does not is run too, and its error is
kept, so that a test asserts what the docs say about it.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("scipy")

CHILD = textwrap.dedent(r'''
    import json, os, sys
    assert os.environ["SCIPY_ARRAY_API"] == "1"
    import numpy as np
    import scipy.integrate, scipy.optimize, scipy.special, scipy.stats
    import functrans as ft

    X = np.array([0.3, 1.2, 2.5, 0.7, 1.9])
    CASES = {
        "special.softmax": lambda x: scipy.special.softmax(x)[1],
        "special.xlogy": lambda x: scipy.special.xlogy(x, x + 1.0).sum(),
        "stats.gmean": scipy.stats.gmean,
        "stats.skew": scipy.stats.skew,
        "stats.kurtosis": scipy.stats.kurtosis,
        "stats.moment": lambda x: scipy.stats.moment(x, order=3),
        "stats.variation": scipy.stats.variation,
        "stats.hmean": scipy.stats.hmean,
        "integrate.trapezoid": lambda x: scipy.integrate.trapezoid(x ** 2, dx=0.5),
        "optimize.rosen": scipy.optimize.rosen,
        "special.logsumexp": scipy.special.logsumexp,
        "special.log_softmax": lambda x: scipy.special.log_softmax(x)[0],
        "stats.zscore": lambda x: scipy.stats.zscore(x)[0],
        "special.expit": lambda x: scipy.special.expit(x).sum(),
        "special.erf": lambda x: scipy.special.erf(x).sum(),
        "special.gammaln": lambda x: scipy.special.gammaln(x).sum(),
        "special.entr": lambda x: scipy.special.entr(x).sum(),
        "stats.entropy": scipy.stats.entropy,
        "integrate.simpson": lambda x: scipy.integrate.simpson(x ** 2),
    }

    def central_differences(f, x, h=1e-6):
        out = np.empty_like(x)
        for i in range(x.size):
            e = np.zeros_like(x)
            e[i] = h
            out[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
        return out

    def attempt(run):
        try:
            return {"value": np.asarray(run()).tolist()}
        except Exception as e:
            return {"error": type(e).__name__, "message": str(e)}

    report = {}
    for name, f in CASES.items():
        xs = np.stack([X, X[::-1] + 0.1])
        report[name] = {
            "reference": float(f(X)),
            "differences": central_differences(f, X).tolist(),
            "differences_batch": [central_differences(f, x).tolist() for x in xs],
            "grad": attempt(lambda: ft.grad(f)(X)),
            "jit": attempt(lambda: ft.jit(f)(X)),
            "vmap_grad": attempt(lambda: ft.vmap(ft.grad(f))(xs)),
        }
    json.dump(report, sys.stdout)
''')


@pytest.fixture(scope="module")
def report():
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


#: Work under grad, jit and vmap(grad).
TRACED = ["special.softmax", "special.xlogy", "stats.gmean", "stats.skew", "stats.kurtosis",
          "stats.moment", "stats.variation", "integrate.trapezoid", "optimize.rosen",
          # SciPy's array_api_extra.at writes in place (x[idx] = v, x[mask] = v) into
          # a copy of a traced array: NumPy's semantics (docs/inplace.md)
          "special.logsumexp", "special.log_softmax", "stats.zscore"]


@pytest.mark.parametrize("name", TRACED)
def test_traces_under_grad_jit_and_vmap(report, name):
    import numpy as np

    r = report[name]
    for mode in ("grad", "jit", "vmap_grad"):
        assert "value" in r[mode], f"{name} under {mode}: {r[mode]}"
    np.testing.assert_allclose(r["grad"]["value"], r["differences"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(r["jit"]["value"], r["reference"], rtol=1e-13)
    np.testing.assert_allclose(r["vmap_grad"]["value"], r["differences_batch"], rtol=1e-6,
                               atol=1e-7)


def test_hmean_branches_on_the_data(report):
    # Its gradient is right where values are known (an eager grad); jit and
    # vmap stop at SciPy's Python test of the data, `if xp.any(a < 0)`.
    import numpy as np

    r = report["stats.hmean"]
    np.testing.assert_allclose(r["grad"]["value"], r["differences"], rtol=1e-6)
    for mode in ("jit", "vmap_grad"):
        assert r[mode]["error"] == "ConcretizationError"
        assert "bool() needs a concrete value" in r[mode]["message"]
        assert "scipy/stats/_stats_py.py" in r[mode]["message"]


@pytest.mark.parametrize("name", ["special.expit", "special.erf", "special.gammaln",
                                  "special.entr", "stats.entropy", "integrate.simpson"])
def test_numpy_fallbacks_are_refused(report, name):
    # scipy.special has native versions for CuPy, JAX and PyTorch only, and
    # falls back to np.asarray for other arrays, as simpson does for all: the
    # conversion would drop the derivative (grad) or needs a value (jit).
    r = report[name]
    assert r["grad"]["error"] == "TracerConversionError"
    assert "np.asarray() would turn a traced" in r["grad"]["message"]
    assert "functrans.scipy" in r["grad"]["message"]
    assert r["jit"]["error"] == "ConcretizationError"
