"""Newton's sparse path finds each problem's pattern once: later minimize
calls on the same function and layout reuse the pattern, colouring and
compiled products (as minimize reuses its jitted derivatives)."""

import numpy as np
import pytest

import functrans.numpy as fnp
from functrans.optimize import _sparse, minimize
from functrans.sparse import _api


def make_chain():
    """A new function object each time: minimize's caches are per function."""

    def chain(x, w):
        return fnp.sum(w * (x[1:] - x[:-1] ** 2) ** 2) + fnp.sum((1.0 - x) ** 2)

    return chain


@pytest.fixture
def detections(monkeypatch):
    calls = []
    real = _api.detect

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(_api, "detect", counted)
    return calls


@pytest.mark.parametrize("method, sparse", [("newton", None), ("newton", True),
                                            ("newton-cg", True)])
def test_a_second_minimize_detects_nothing(detections, method, sparse):
    n = _sparse.SPARSE_MIN_N + 2
    x0 = np.full(n, 0.5)
    opts = {"sparse": sparse}
    chain = make_chain()
    first = minimize(chain, x0, args=(3.0,), method=method, options=opts)
    assert first.success and len(detections) == 1
    again = minimize(chain, x0 + 0.1, args=(2.0,), method=method, options=opts)
    assert again.success and len(detections) == 1
    np.testing.assert_allclose(again.x, minimize(chain, x0, args=(2.0,), method="bfgs").x,
                               atol=1e-5)
    minimize(chain, np.full(n + 4, 0.5), args=(3.0,), method=method, options=opts)
    assert len(detections) == 2  # a new shape: a new pattern


def test_the_auto_decision_is_kept_per_signature(detections):
    def dense(x):
        return fnp.sum(x) ** 4 + fnp.sum(x ** 2)

    x0 = np.full(_sparse.SPARSE_MIN_N, 0.3)
    for _ in range(2):
        r = minimize(dense, x0, method="newton")
        assert r.success and isinstance(r.hess, np.ndarray)  # dense pattern: dense path
    assert len(detections) == 1
