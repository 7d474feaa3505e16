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
    Q = np.array([0.2, 0.3, 0.1, 0.25, 0.15])  # a NumPy constant
    ss, st = scipy.special, scipy.stats
    CASES = {
        "special.softmax": lambda x: ss.softmax(x)[1],
        "special.xlogy": lambda x: ss.xlogy(x, x + 1.0).sum(),
        "stats.gmean": st.gmean,
        "stats.skew": st.skew,
        "stats.kurtosis": st.kurtosis,
        "stats.moment": lambda x: st.moment(x, order=3),
        "stats.variation": st.variation,
        "stats.hmean": st.hmean,
        "stats.pmean": lambda x: st.pmean(x, 2.0),
        "stats.sem": st.sem,
        "stats.tmean": st.tmean,
        "stats.tvar": st.tvar,
        "stats.tstd": st.tstd,
        "stats.trim_mean": lambda x: st.trim_mean(x, 0.2),
        "stats.gstd": st.gstd,
        "stats.differential_entropy": st.differential_entropy,
        "integrate.trapezoid": lambda x: scipy.integrate.trapezoid(x ** 2, dx=0.5),
        "optimize.rosen": scipy.optimize.rosen,
        "special.logsumexp": ss.logsumexp,
        "special.log_softmax": lambda x: ss.log_softmax(x)[0],
        "stats.zscore": lambda x: st.zscore(x)[0],
        "special.expit": lambda x: ss.expit(x).sum(),
        "special.logit": lambda x: ss.logit(x / 3.0).sum(),
        "special.log_expit": lambda x: ss.log_expit(x).sum(),
        "special.erf": lambda x: ss.erf(x).sum(),
        "special.erfc": lambda x: ss.erfc(x).sum(),
        "special.gammaln": lambda x: ss.gammaln(x).sum(),
        "special.psi": lambda x: ss.psi(x).sum(),
        "special.entr": lambda x: ss.entr(x).sum(),
        "special.xlog1py": lambda x: ss.xlog1py(x, x).sum(),
        "special.rel_entr": lambda x: ss.rel_entr(x, x[::-1]).sum(),
        "stats.entropy": st.entropy,
        "special.ndtr": lambda x: ss.ndtr(x).sum(),
        "special.log_ndtr": lambda x: ss.log_ndtr(x).sum(),
        "special.rel_entr_numpy_constant": lambda x: ss.rel_entr(x, Q).sum(),
        "special.kl_div_numpy_constant": lambda x: ss.kl_div(x, Q).sum(),
        "stats.entropy_numpy_constant": lambda x: st.entropy(x, Q),
        "integrate.simpson": lambda x: scipy.integrate.simpson(x ** 2),
        "optimize.rosen_der": lambda x: scipy.optimize.rosen_der(x).sum(),
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
    # SciPy on traced arrays gives its ufuncs' dtypes (bool computes in float32)
    report["dtypes"] = {
        f"{name}({dtype})": [attempt(lambda: str(ft.jit(getattr(ss, name))(x).dtype)),
                             str(getattr(ss, name)(x).dtype)]
        for name in ("entr", "erfinv", "expit", "gammaln", "ndtr")
        for dtype, x in (("bool", X > 1), ("float32", X.astype(np.float32) / 3),
                         ("int64", np.arange(1, 4)))
    }
    # The way around a NumPy constant: make it an argument that jit traces.
    rel_entr_q = ft.jit(ft.grad(lambda x, q: ss.rel_entr(x, q).sum()))
    report["rel_entr_constant_as_argument"] = {
        "differences": central_differences(lambda x: ss.rel_entr(x, Q).sum(), X).tolist(),
        "jit_grad": attempt(lambda: rel_entr_q(X, Q)),
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
TRACED = ["special.softmax", "stats.gmean", "stats.skew", "stats.kurtosis",
          "stats.moment", "stats.variation", "stats.sem", "stats.tmean", "stats.tvar",
          "stats.tstd", "stats.trim_mean", "stats.gstd", "stats.differential_entropy",
          "integrate.trapezoid", "optimize.rosen",
          # SciPy's array_api_extra.at writes in place (x[idx] = v, x[mask] = v) into
          # a copy of a traced array: NumPy's semantics (docs/inplace.md)
          "special.logsumexp", "special.log_softmax", "stats.zscore",
          # SciPy takes these from the namespace's special extension,
          # functrans.numpy.special (functrans.scipy.special)
          "special.expit", "special.logit", "special.erf", "special.erfc", "special.gammaln",
          "special.psi", "special.ndtr", "special.entr", "special.xlogy", "special.xlog1py",
          "special.log_expit", "stats.entropy",
          # SciPy's own array API code (apply_where)
          "special.rel_entr"]


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


#: Work under an eager grad only.
BRANCHING = ["stats.hmean", "stats.pmean"]
#: SciPy converts the tracer with np.asarray.
FALLBACKS = ["special.log_ndtr", "integrate.simpson", "optimize.rosen_der"]
#: SciPy refuses a NumPy array beside a traced one.
MIXED = ["special.rel_entr_numpy_constant", "special.kl_div_numpy_constant",
         "stats.entropy_numpy_constant"]


def test_every_case_is_classified(report):
    cases = set(report) - {"dtypes", "rel_entr_constant_as_argument"}
    groups = TRACED + BRANCHING + FALLBACKS + MIXED
    assert len(groups) == len(set(groups)) and set(groups) == cases


@pytest.mark.parametrize("name", BRANCHING)
def test_python_branches_on_the_data(report, name):
    # The gradient is right where values are known (an eager grad); jit and
    # vmap stop at SciPy's Python test of the data, `if xp.any(a < 0)`.
    import numpy as np

    r = report[name]
    np.testing.assert_allclose(r["grad"]["value"], r["differences"], rtol=1e-6)
    for mode in ("jit", "vmap_grad"):
        assert r[mode]["error"] == "ConcretizationError"
        assert "bool() needs a concrete value" in r[mode]["message"]
        assert "scipy/stats/_stats_py.py" in r[mode]["message"]


@pytest.mark.parametrize("name", FALLBACKS)
def test_numpy_fallbacks_are_refused(report, name):
    # log_ndtr has no functrans version for SciPy to find, so SciPy
    # falls back to np.asarray, as simpson and rosen_der do for every array:
    # the conversion would drop the derivative (grad) or needs a value (jit).
    r = report[name]
    assert r["grad"]["error"] == "TracerConversionError"
    assert "np.asarray() would turn a traced" in r["grad"]["message"]
    assert r["jit"]["error"] == "ConcretizationError"
    assert r["vmap_grad"]["error"] == "ConcretizationError"


@pytest.mark.parametrize("name", MIXED)
def test_numpy_constants_beside_tracers_are_refused_by_scipy(report, name):
    # SciPy's array_namespace refuses arrays of two libraries in one call.
    r = report[name]
    for mode in ("grad", "jit", "vmap_grad"):
        assert r[mode]["error"] == "TypeError"
        assert r[mode]["message"].startswith("Multiple namespaces for array inputs")


def test_a_numpy_constant_passed_as_a_traced_argument(report):
    import numpy as np

    r = report["rel_entr_constant_as_argument"]
    np.testing.assert_allclose(r["jit_grad"]["value"], r["differences"], rtol=1e-6)


def test_traced_special_functions_have_the_ufuncs_dtypes(report):
    for case, (got, want) in report["dtypes"].items():
        assert got == {"value": want}, case


def test_functrans_numpy_special_holds_scipys_ufuncs_functrans_implements():
    import numpy as np
    import scipy.special as ss

    import functrans as ft
    import functrans.numpy as fnp

    x = np.array([0.0, 0.5, 2.0])
    np.testing.assert_allclose(ft.jit(fnp.special.entr)(x), ss.entr(x), rtol=1e-15)
    np.testing.assert_allclose(ft.grad(lambda v: fnp.special.erf(v).sum())(x),
                               2 / np.sqrt(np.pi) * np.exp(-x ** 2), rtol=1e-14)
    assert fnp.special.entr(x > 1).dtype == ss.entr(x > 1).dtype == np.float32
    # SciPy reads a missing function as "no native version"
    assert getattr(fnp.special, "ndtri", None) is None
    with pytest.raises(AttributeError, match="functrans implements no ufunc scipy.special.ndtri"):
        fnp.special.ndtri  # noqa: B018
