"""Sparsity detection refuses, with an error naming the primitive and the way
out, a rule whose pattern would pass ``MAX_DEPENDENCES`` (element, input
element) pairs: a dense coupling (a gather at traced indices), a
``dot_general`` and a cumulative sum each have their own check."""

import numpy as np
import pytest

import functrans.numpy as fnp
import functrans.sparse as fsp
from functrans.errors import FunctransError
from functrans.interpreters import sparsity

M = np.ones((10, 10))


@pytest.mark.parametrize("f, names", [
    (lambda x: x[fnp.argsort(x)], "'gather' (every output element on every operand element)"),
    (lambda x: M @ x, "'dot_general' of f64[10,10] and f64[10]"),
    (lambda x: fnp.cumsum(x), "'cumsum' along an axis of 10"),
])
def test_a_nearly_dense_pattern_is_refused_naming_the_primitive(monkeypatch, f, names):
    monkeypatch.setattr(sparsity, "MAX_DEPENDENCES", 50)
    with pytest.raises(FunctransError) as info:
        fsp.jacobian_sparsity(f)(np.ones(10))
    message = str(info.value)
    assert message.startswith("sparse.jacobian_sparsity(<lambda>): sparsity detection: ")
    assert names in message
    assert "use the dense transforms (functrans.hessian, jacfwd, jacrev) or hvp" in message


def test_below_the_limit_the_same_programs_are_detected(monkeypatch):
    monkeypatch.setattr(sparsity, "MAX_DEPENDENCES", 1000)
    pattern = fsp.jacobian_sparsity(lambda x: fnp.cumsum(x))(np.ones(10))
    assert pattern.nnz == 55
