"""Every primitive in ``functrans.core.registry`` against independent NumPy code.

Each primitive's row in ``tests/_specs.py`` says how to draw its operands
and params (shapes of rank 0 to 4 with size-0 and size-1 axes,
broadcasting, dtypes, value ranges away from domain errors) and gives a
reference written with NumPy directly, never with the primitive's own impl.
One hypothesis test runs each row three ways: eagerly (``prim.bind``),
traced (``trace_to_jaxpr`` + ``check_jaxpr``, then both evaluators) and
abstractly (``abstract_eval``).  ``test_every_primitive_has_a_spec`` makes a
new primitive without a row fail.  The shape rules' errors are checked in
tests/specs/test_shape_errors.py.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import _specs
import numpy as np
import pytest
from _specs import SCATTER_UFUNCS, SPECS, logistic_ref
from hypothesis import given
from hypothesis import strategies as st
from numpy.exceptions import ComplexWarning

import functrans  # noqa: F401  (registers the primitives)
from functrans import core
from functrans.backends import numpy as numpy_backend
from functrans.core import get_aval, registry
from functrans.errors import DTypeError
from functrans.testing import strategies as fts


def test_every_primitive_has_exactly_one_spec():
    missing = sorted(set(registry) - set(SPECS))
    assert not missing, f"primitives without a row in tests/_specs.py: {missing}"
    assert not set(SPECS) - set(registry), "tests/_specs.py names primitives that do not exist"
    # A repeated key in the table's literal would silently drop a row.
    table = next(node.value for node in ast.parse(Path(_specs.__file__).read_text()).body
                 if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "SPECS")
    keys = [k.value for k in table.keys]
    assert sorted(keys) == sorted(SPECS), "tests/_specs.py: rows outside the SPECS literal"
    assert len(keys) == len(set(keys)), f"repeated rows: {[k for k in SPECS if keys.count(k) > 1]}"


# --------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------

_RTOL = {"e": 2e-3, "f": 2e-6, "d": 1e-12}


def assert_matches(got, want, exact: bool, what: str):
    want = np.asarray(want)
    assert type(got) is np.ndarray, f"{what}: got a {type(got).__name__}, not an ndarray"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy gives {want.shape}"
    if exact or want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what, strict=True)
    else:
        part = want.real.dtype.char if want.dtype.kind == "c" else want.dtype.char
        rtol = _RTOL.get(part, 1e-12)
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


def traced(prim, params):
    def user_fun(*xs):
        out = prim.bind(*xs, **params)
        return out if prim.multiple_results else [out]

    return user_fun


def check_spec(name: str, args: tuple, params: dict):
    prim, spec = registry[name], SPECS[name].impl
    if spec.raises:
        return check_raising_spec(prim, spec, args, params)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ComplexWarning)
        try:
            want = spec.reference(*args, **params)
        except TypeError:
            # NumPy has no loop for these dtypes: the primitive refuses them too.
            avals = [get_aval(a) for a in args]
            with pytest.raises(TypeError):
                prim.bind(*args, **params)
            with pytest.raises(DTypeError, match=name):
                prim.abstract_eval(*avals, **params)
            with pytest.raises(DTypeError, match="user_fun"):
                core.trace_to_jaxpr(traced(prim, params), args)
            return
        wants = list(want) if prim.multiple_results else [want]

        # (a) eagerly
        got = prim.bind(*args, **params)
        gots = list(got) if prim.multiple_results else [got]
        for g, w in zip(gots, wants):
            assert_matches(g, w, spec.exact, f"eager {name}")

        # (b) traced, type-checked, evaluated by both evaluators
        closed, _, concretized = core.trace_to_jaxpr(traced(prim, params), args)
        assert not concretized
        core.check_jaxpr(closed)
        for how, outs in (("backends.numpy", numpy_backend.eval_jaxpr(closed, *args)),
                          ("core", core.eval_jaxpr(closed.jaxpr, closed.consts, *args))):
            for o, g in zip(outs, gots):
                assert_matches(o, g, True, f"{how}.eval_jaxpr of {name}")

        # (c) the shape rule agrees with what the impl made
        avals = prim.abstract_eval(*[get_aval(a) for a in args], **params)
        avals = list(avals) if prim.multiple_results else [avals]
        for aval, g, v in zip(avals, gots, closed.jaxpr.outvars):
            assert (aval.shape, aval.dtype) == (g.shape, g.dtype), (aval, g.shape, g.dtype)
            assert v.aval.strip_weak() == aval.strip_weak()


def check_raising_spec(prim, spec, args, params):
    """A primitive that records and type-checks but refuses to evaluate."""
    error, match = spec.raises
    with pytest.raises(error, match=match):
        prim.bind(*args, **params)
    closed, _, _ = core.trace_to_jaxpr(traced(prim, params), args)
    core.check_jaxpr(closed)
    avals = prim.abstract_eval(*[get_aval(a) for a in args], **params)
    avals = list(avals) if prim.multiple_results else [avals]
    assert [v.aval for v in closed.jaxpr.outvars] == avals
    with pytest.raises(error, match=match):
        numpy_backend.eval_jaxpr(closed, *args)
    with pytest.raises(error, match=match):
        core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


@pytest.mark.parametrize("name", sorted(SPECS))
@given(data=st.data())
def test_primitive_matches_numpy(name, data):
    args, params = SPECS[name].impl.draw(data.draw)
    check_spec(name, args, params)


# --------------------------------------------------------------------------
# Fixed cases: NumPy's own spellings, and past bugs
# --------------------------------------------------------------------------

@given(data=st.data())
def test_pad_matches_np_pad_for_non_negative_padding(data):
    x = data.draw(fts.arrays(shape=fts.shapes(min_rank=1, max_side=4), min_value=-9,
                             max_value=9))
    config = tuple((data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3)), 0)
                   for _ in x.shape)
    value = np.zeros((), x.dtype)
    got = registry["pad"].bind(x, value, padding_config=config)
    widths = np.array([(lo, hi) for lo, hi, _ in config], dtype=int).reshape(x.ndim, 2)
    want = np.pad(x, widths, constant_values=value)
    assert_matches(got, want, True, "pad")


def test_scatter_add_accumulates_repeated_indices_like_np_add_at():
    x = np.zeros((4, 2))
    idx = np.array([0, 3, 0, 0])
    updates = np.arange(8.0).reshape(4, 2)
    got = registry["scatter"].bind(x, updates, idx, spec=(("array",), ("slice", None, None, None)),
                                   mode="add")
    want = x.copy()
    np.add.at(want, (idx, slice(None)), updates)
    assert_matches(got, want, True, "scatter add")


@pytest.mark.parametrize("mode", ["add", "mul", "min", "max", "set"])
def test_scatter_converts_updates_to_the_operand_dtype_first(mode):
    # Basic and advanced indices must agree: -0.6 becomes 0 before it is added.
    x = np.array([3, 3, 3], np.int32)
    updates = np.array([-0.6, 2.7])
    basic = registry["scatter"].bind(x, updates, spec=(("slice", 0, 2, None),), mode=mode)
    advanced = registry["scatter"].bind(x, updates, np.array([0, 1]), spec=(("array",),),
                                        mode=mode)
    want = x.copy()
    cast = updates.astype(np.int32)
    want[:2] = cast if mode == "set" else SCATTER_UFUNCS[mode](want[:2], cast)
    assert_matches(basic, want, True, "basic index")
    assert_matches(advanced, want, True, "advanced index")


@pytest.mark.parametrize("batch", [0, 2])
def test_dot_general_with_empty_axes(batch):
    lhs, rhs = np.ones((batch, 0, 3)), np.ones((batch, 3, 2))
    dims = (((2,), (1,)), ((0,), (0,)))
    got = registry["dot_general"].bind(lhs, rhs, dimension_numbers=dims)
    assert_matches(got, np.einsum("bij,bjk->bik", lhs, rhs), True, "dot_general")
    got = registry["dot_general"].bind(np.ones((0, 3)), np.ones((3, 4)),
                                       dimension_numbers=(((1,), (0,)), ((), ())))
    assert_matches(got, np.zeros((0, 4)), True, "dot_general")


@pytest.mark.parametrize("name, params", [
    ("slice", {"start_indices": (), "limit_indices": (), "strides": ()}),
    ("rev", {"dimensions": ()}),
    ("dynamic_slice", {"slice_sizes": ()}),
    ("gather", {"spec": ()}),
    ("reshape", {"new_sizes": ()}),
    ("transpose", {"permutation": ()}),
    ("squeeze", {"dimensions": ()}),
    ("reduce_sum", {"axes": ()}),
])
def test_rank_0_results_are_arrays_not_numpy_scalars(name, params):
    out = registry[name].bind(np.array(2.5), **params)
    assert type(out) is np.ndarray and out.shape == () and out == 2.5


def test_pad_of_a_rank_0_array_is_an_array():
    out = registry["pad"].bind(np.array(2.5), np.array(0.0), padding_config=())
    assert type(out) is np.ndarray and out == 2.5


@pytest.mark.parametrize("x", [np.array([True, False]), np.array([-40, 0, 40], np.int8),
                               np.array([1 + 2j, -3j]), np.array([-800.0, 0.0, 800.0])])
def test_logistic_of_bool_int_complex_and_extreme_floats(x):
    got = registry["logistic"].bind(x)
    want = logistic_ref(x)
    assert_matches(got, want, False, "logistic")
    assert got.dtype == registry["logistic"].abstract_eval(get_aval(x)).dtype


def test_every_elementwise_row_has_its_binding_function():
    from functrans.primitives import elementwise

    for name in list(elementwise.unary) + list(elementwise.binary):
        fn = getattr(elementwise, name, None) or getattr(elementwise, f"{name}_", None)
        assert fn is not None and fn.__name__ == name, name
