"""Every function's result against NumPy where an in-place update can tell:
each ``functrans.numpy`` function that makes an array from an array runs
in the program ``y = fn(x); r = y.reshape(-1); y += 1; return r, x`` on a
C-ordered, a Fortran-ordered and a transposed input, and in
``y = fn(x); alias = y; y += 1; return alias, x`` on a 0-d input.  Whether
``r`` and ``alias`` see the update depends on NumPy's memory layout of
``y`` (``functrans/numpy/_memory_order.py``), on whether ``y`` is a view
of ``x`` (``_inplace.py``) and on whether a 0-d ``y`` is a scalar or an
array (``_scalars.py``).  Under ``jit`` and under the eager trace of
``vjp``, functrans must give NumPy's answer, or refuse the update with
``InPlaceUpdateError``: never another answer.

The table walks the namespace, so a function added without a layout rule
is checked too: it runs with its default arguments (``fn(x)``) unless
``ARGUMENTS`` gives it others.
"""

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError
from functrans.numpy._inplace import InPlaceUpdateError

#: Arguments for the functions that need more than the array (``xp`` is
#: NumPy or ``functrans.numpy``), and more calls of some.
ARGUMENTS = {
    "dot": lambda xp, x: xp.dot(x, xp.ones(x.shape[-1:] + (2,))) if x.ndim else xp.dot(x, 2.0),
    "matmul": lambda xp, x: xp.matmul(x, xp.ones(x.shape[-1:] + (2,))),
    "matmul of a vector": lambda xp, x: x @ xp.ones(x.shape[-1:]) if x.ndim else x * 1.0,
    "vdot": lambda xp, x: xp.vdot(x, x),
    "vecdot": lambda xp, x: xp.vecdot(x, x) if x.ndim else xp.multiply(x, x),
    "inner": lambda xp, x: xp.inner(x, xp.ones(x.shape[-1:])),
    "outer": lambda xp, x: xp.outer(x, xp.ones(2)),
    "tensordot": lambda xp, x: xp.tensordot(x, xp.ones(x.shape[-1:]), axes=1),
    "einsum": lambda xp, x: xp.einsum("ij...->ji...", x) if x.ndim >= 2 else
    xp.einsum("...->...", x),
    "einsum of a diagonal": lambda xp, x: xp.einsum("ii->i", x[..., :2, :2]) if x.ndim == 2 else
    xp.einsum("...->...", x),
    "einsum sum": lambda xp, x: xp.einsum("i...->...", x) if x.ndim else xp.einsum("->", x),
    "einsum product": lambda xp, x: xp.einsum("...,...->...", x, x),
    "full_like": lambda xp, x: xp.full_like(x, 2.0),
    "full_like of a traced value": lambda xp, x: xp.full_like(x, xp.sum(x)),
    "array": lambda xp, x: xp.array(x),
    "array C": lambda xp, x: xp.array(x, order="C"),
    "array F": lambda xp, x: xp.array(x, order="F"),
    "asarray F": lambda xp, x: xp.asarray(x, order="F"),
    "asarray C": lambda xp, x: xp.asarray(x, order="C"),
    "ones_like A": lambda xp, x: xp.ones_like(x, order="A"),
    "require": lambda xp, x: xp.require(x, requirements="C"),
    "require F": lambda xp, x: xp.require(x, requirements="F"),
    "power": lambda xp, x: xp.power(x, 2.0),
    "pow": lambda xp, x: xp.pow(x, 3),
    "logical_and": lambda xp, x: xp.logical_and(x, x > 0.3),
    "logical_or": lambda xp, x: xp.logical_or(x, x > 0.3),
    "logical_xor": lambda xp, x: xp.logical_xor(x > 0.3, x),
    "invert": lambda xp, x: xp.invert(x > 0.3),
    "bitwise_not": lambda xp, x: xp.bitwise_not((x * 10).astype(xp.int64)),
    "bitwise_invert": lambda xp, x: xp.bitwise_invert((x * 10).astype(xp.int64)),
    "add": lambda xp, x: xp.add(x, 1.5),
    "subtract": lambda xp, x: xp.subtract(1.5, x),
    "multiply": lambda xp, x: xp.multiply(x, x),
    "divide": lambda xp, x: xp.divide(x, 3.0),
    "true_divide": lambda xp, x: xp.true_divide(3.0, x),
    "floor_divide": lambda xp, x: xp.floor_divide(x, 0.3),
    "remainder": lambda xp, x: xp.remainder(x, 0.3),
    "mod": lambda xp, x: xp.mod(x, 0.3),
    "maximum": lambda xp, x: xp.maximum(x, 0.3),
    "minimum": lambda xp, x: xp.minimum(0.3, x),
    "arctan2": lambda xp, x: xp.arctan2(x, 0.3),
    "atan2": lambda xp, x: xp.atan2(0.3, x),
    "copysign": lambda xp, x: xp.copysign(x, -1.0),
    "equal": lambda xp, x: xp.equal(x, 0.375),
    "not_equal": lambda xp, x: xp.not_equal(x, 0.375),
    "less": lambda xp, x: xp.less(x, 0.3),
    "less_equal": lambda xp, x: xp.less_equal(x, 0.3),
    "greater": lambda xp, x: xp.greater(x, 0.3),
    "greater_equal": lambda xp, x: xp.greater_equal(x, 0.3),
    "bitwise_and": lambda xp, x: xp.bitwise_and((x * 10).astype(xp.int64), 3),
    "bitwise_or": lambda xp, x: xp.bitwise_or((x * 10).astype(xp.int64), 3),
    "bitwise_xor": lambda xp, x: xp.bitwise_xor((x * 10).astype(xp.int64), 3),
    "left_shift": lambda xp, x: xp.left_shift((x * 10).astype(xp.int64), 1),
    "bitwise_left_shift": lambda xp, x: xp.bitwise_left_shift((x * 10).astype(xp.int64), 1),
    "right_shift": lambda xp, x: xp.right_shift((x * 10).astype(xp.int64), 1),
    "bitwise_right_shift": lambda xp, x: xp.bitwise_right_shift((x * 10).astype(xp.int64), 1),
    "nextafter": lambda xp, x: xp.nextafter(x, 1.0),
    "logaddexp": lambda xp, x: xp.logaddexp(x, 0.3),
    "logaddexp2": lambda xp, x: xp.logaddexp2(x, 0.3),
    "fmax": lambda xp, x: xp.fmax(x, 0.3),
    "fmin": lambda xp, x: xp.fmin(x, 0.3),
    "hypot": lambda xp, x: xp.hypot(x, 0.3),
    "fmod": lambda xp, x: xp.fmod(x, 0.3),
    "heaviside": lambda xp, x: xp.heaviside(x - 0.375, 0.5),
    "isclose": lambda xp, x: xp.isclose(x, 0.375),
    "float_power": lambda xp, x: xp.float_power(x, 2.0),
    "take": lambda xp, x: xp.take(x, [0, 1, 1]),
    "take along an axis": lambda xp, x: xp.take(x, [1, 0], axis=0) if x.ndim else xp.take(x, 0),
    "cumulative_sum": lambda xp, x: xp.cumulative_sum(x, axis=0) if x.ndim else
    xp.cumulative_sum(x),
    "cumulative_prod": lambda xp, x: xp.cumulative_prod(x, axis=-1) if x.ndim else
    xp.cumulative_prod(x),
    "reshape": lambda xp, x: xp.reshape(x, (-1,)),
    "reshape reversing the shape": lambda xp, x: xp.reshape(x, x.shape[::-1]),
    "moveaxis": lambda xp, x: xp.moveaxis(x, 0, -1),
    "swapaxes": lambda xp, x: xp.swapaxes(x, 0, -1),
    "permute_dims": lambda xp, x: xp.permute_dims(x, tuple(range(x.ndim))[::-1]),
    "expand_dims": lambda xp, x: xp.expand_dims(x, 0),
    "broadcast_to": lambda xp, x: xp.broadcast_to(x, (2,) + x.shape),
    "split": lambda xp, x: xp.split(x, 2),
    "array_split": lambda xp, x: xp.array_split(x, 2, axis=-1),
    "hsplit": lambda xp, x: xp.hsplit(x, 1),
    "vsplit": lambda xp, x: xp.vsplit(x, 2),
    "dsplit": lambda xp, x: xp.dsplit(x, 2),
    "tile": lambda xp, x: xp.tile(x, 2),
    "tile once": lambda xp, x: xp.tile(x, 1),
    "repeat": lambda xp, x: xp.repeat(x, 2, axis=0) if x.ndim else xp.repeat(x, 2),
    "repeat once": lambda xp, x: xp.repeat(x, 1, axis=-1) if x.ndim else xp.repeat(x, 1),
    "astype": lambda xp, x: xp.astype(x, xp.float32),
    "append": lambda xp, x: xp.append(x, x, axis=0) if x.ndim else xp.append(x, x),
    "roll": lambda xp, x: xp.roll(x, 1),
    "roll by nothing": lambda xp, x: xp.roll(x, 0),
    "roll along an axis": lambda xp, x: xp.roll(x, 1, axis=0) if x.ndim else xp.roll(x, 1),
    "rollaxis": lambda xp, x: xp.rollaxis(x, -1),
    "pad": lambda xp, x: xp.pad(x, 1),
    "pad by nothing": lambda xp, x: xp.pad(x, 0),
    "kron": lambda xp, x: xp.kron(x, xp.ones((2,) * x.ndim)),
    "cross": lambda xp, x: xp.cross(x, xp.ones(3)),
    "partition": lambda xp, x: xp.partition(x, 1) if x.ndim else xp.partition(x, 0),
    "argpartition": lambda xp, x: xp.argpartition(x, 1),
    "searchsorted": lambda xp, x: xp.searchsorted(xp.linspace(0, 1, 5), x),
    "select": lambda xp, x: xp.select([x > 0.5], [x], 0.0),
    "take_along_axis": lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=0), axis=0),
    "isin": lambda xp, x: xp.isin(x, [0.125]),
    "quantile": lambda xp, x: xp.quantile(x, [0.5, 0.6], axis=0) if x.ndim else
    xp.quantile(x, 0.5),
    "percentile": lambda xp, x: xp.percentile(x, 50, axis=-1) if x.ndim else xp.percentile(x, 50),
    "nanquantile": lambda xp, x: xp.nanquantile(x, 0.5, axis=0) if x.ndim else
    xp.nanquantile(x, 0.5),
    "nanpercentile": lambda xp, x: xp.nanpercentile(x, 50),
    "convolve": lambda xp, x: xp.convolve(xp.ravel(x), [1.0, 2.0]),
    "correlate": lambda xp, x: xp.correlate(xp.ravel(x), [1.0, 2.0], "full"),
    "interp": lambda xp, x: xp.interp(x, [0.0, 1.0], [1.0, 3.0]),
    "polyval": lambda xp, x: xp.polyval([1.0, 2.0], x),
    "vander": lambda xp, x: xp.vander(xp.ravel(x), 3),
    "digitize": lambda xp, x: xp.digitize(x, [0.2, 0.5]),
    "piecewise": lambda xp, x: xp.piecewise(x, [x > 0.5], [1.0, 2.0]),
    "apply_along_axis": lambda xp, x: xp.apply_along_axis(lambda v: v * 2, 0, x),
    "apply_over_axes": lambda xp, x: xp.apply_over_axes(xp.sum, x, [0] if x.ndim else []),
    "where": lambda xp, x: xp.where(x > 0.4, x, 0.0),
    "clip": lambda xp, x: xp.clip(x, 0.2, 0.5),
    "clip without bounds": lambda xp, x: xp.clip(x, None, None),
    "sum along an axis": lambda xp, x: xp.sum(x, axis=0) if x.ndim else xp.sum(x),
    "sum keeping the axis": lambda xp, x: xp.sum(x, axis=-1, keepdims=True) if x.ndim else
    xp.sum(x, keepdims=True),
    "max along an axis": lambda xp, x: xp.max(x, axis=0) if x.ndim else xp.max(x),
    "argmax along an axis": lambda xp, x: xp.argmax(x, axis=0) if x.ndim else xp.argmax(x),
    "mean along an axis": lambda xp, x: xp.mean(x, axis=-1) if x.ndim else xp.mean(x),
    "var along an axis": lambda xp, x: xp.var(x, axis=0) if x.ndim else xp.var(x),
    "std along an axis": lambda xp, x: xp.std(x, axis=-1, ddof=1) if x.ndim else xp.std(x),
    "prod along an axis": lambda xp, x: xp.prod(x, axis=0) if x.ndim else xp.prod(x),
    "min keeping the axis": lambda xp, x: xp.min(x, axis=1, keepdims=True) if x.ndim else
    xp.min(x),
    "all along an axis": lambda xp, x: xp.all(x > 0.3, axis=0) if x.ndim else xp.all(x),
    "any along an axis": lambda xp, x: xp.any(x > 0.3, axis=-1) if x.ndim else xp.any(x),
    "ptp along an axis": lambda xp, x: xp.ptp(x, axis=0) if x.ndim else xp.ptp(x),
    "average along an axis": lambda xp, x: xp.average(x, axis=0) if x.ndim else xp.average(x),
    "average, weighted": lambda xp, x: xp.average(x, axis=-1, weights=xp.arange(
        1.0, x.shape[-1] + 1)) if x.ndim else xp.average(x),
    "median along an axis": lambda xp, x: xp.median(x, axis=0) if x.ndim else xp.median(x),
    "count_nonzero along an axis": lambda xp, x: xp.count_nonzero(x > 0.3, axis=0) if x.ndim
    else xp.count_nonzero(x),
    "nansum along an axis": lambda xp, x: xp.nansum(x, axis=0) if x.ndim else xp.nansum(x),
    "nanmean along an axis": lambda xp, x: xp.nanmean(x, axis=-1) if x.ndim else xp.nanmean(x),
    "nanvar along an axis": lambda xp, x: xp.nanvar(x, axis=0) if x.ndim else xp.nanvar(x),
    "nanmax along an axis": lambda xp, x: xp.nanmax(x, axis=0) if x.ndim else xp.nanmax(x),
    "nanargmax along an axis": lambda xp, x: xp.nanargmax(x, axis=0) if x.ndim else
    xp.nanargmax(x),
    "nanmedian along an axis": lambda xp, x: xp.nanmedian(x, axis=0) if x.ndim else
    xp.nanmedian(x),
    "trace of a stack": lambda xp, x: xp.trace(x, axis1=0, axis2=-1) if x.ndim >= 2 else x * 1.0,
    "trapezoid along the first axis": lambda xp, x: xp.trapezoid(x, axis=0),
    "linalg.vector_norm": lambda xp, x: xp.linalg.vector_norm(x, axis=0) if x.ndim else
    xp.linalg.vector_norm(x),
    "linalg.matrix_norm": lambda xp, x: xp.linalg.matrix_norm(x),
    "cumsum along the first axis": lambda xp, x: xp.cumsum(x, axis=0) if x.ndim else
    xp.cumsum(x),
    "sort along the first axis": lambda xp, x: xp.sort(x, axis=0) if x.ndim else xp.sort(x, None),
    "argsort along the first axis": lambda xp, x: xp.argsort(x, axis=0) if x.ndim else
    xp.argsort(x, None),
    "sort flat": lambda xp, x: xp.sort(x, axis=None),
    "sort, reversed": lambda xp, x: xp.sort(x)[..., ::-1] if x.ndim else xp.sort(x, None),
    "diff along the first axis": lambda xp, x: xp.diff(x, axis=0),
    "linalg.inv": lambda xp, x: xp.linalg.inv(x[..., :2, :2] + 2 * xp.eye(2)),
    "linalg.det": lambda xp, x: xp.linalg.det(x[..., :2, :2]),
    "linalg.solve": lambda xp, x: xp.linalg.solve(xp.eye(2) * 3 + 0.0, x[..., :2, :]),
    "linalg.norm": lambda xp, x: xp.linalg.norm(x, axis=0),
    "linalg.pinv": lambda xp, x: xp.linalg.pinv(x),
    "linalg.qr": lambda xp, x: xp.linalg.qr(x),
    "linalg.svd": lambda xp, x: xp.linalg.svd(x),
    "linalg.matrix_transpose": lambda xp, x: xp.linalg.matrix_transpose(x),
    "linalg.diagonal": lambda xp, x: xp.linalg.diagonal(x),
    "fft.fft": lambda xp, x: xp.fft.fft(x, axis=0),
    "fft.rfft": lambda xp, x: xp.fft.rfft(x),
    "fft.fftn": lambda xp, x: xp.fft.fftn(x),
    "fft.fftshift": lambda xp, x: xp.fft.fftshift(x),
    "fft.irfft": lambda xp, x: xp.fft.irfft(x, axis=0),
    "x.conj()": lambda xp, x: x.conj(),
    "x.conjugate()": lambda xp, x: x.conjugate(),
    "x.copy()": lambda xp, x: x.copy(),
    "x.astype(float32)": lambda xp, x: x.astype(xp.float32),
    "x.flatten()": lambda xp, x: x.flatten(),
    "x.T": lambda xp, x: x.T,
    "x.mT": lambda xp, x: x.mT,
    "real of complex": lambda xp, x: xp.real(x * 1j + x),
    "conj of complex": lambda xp, x: xp.conj(x * 1j + x),
    "x.conj() of complex": lambda xp, x: (x * 1j + x).conj(),
    "iscomplex of complex": lambda xp, x: xp.iscomplex(x * 1j),
    "x[...]": lambda xp, x: x[...],
    "x[0]": lambda xp, x: x[0] if x.ndim else x[()],
    "x[[0, 1]]": lambda xp, x: x[[0, 1]] if x.ndim else x[None][[0]],
    "x[..., ::2]": lambda xp, x: x[..., ::2],
    "-x": lambda xp, x: -x,
    "+x": lambda xp, x: +x,
    "abs(x)": lambda xp, x: abs(x),
    "x * 2": lambda xp, x: x * 2,
    "x ** 2": lambda xp, x: x ** 2,
    "x ** 0.5": lambda xp, x: x ** 0.5,
}

#: Functions that take no array, or give no array of it (predicates, shapes,
#: dtypes, in-place writers, random-free creation from shapes).
NO_ARRAY = {
    "isdtype", "issubdtype", "promote_types", "result_type", "can_cast", "ndim", "shape", "size",
    "iscomplexobj", "isrealobj", "broadcast_shapes", "copyto", "put", "place", "putmask", "at",
    "__array_namespace_info__", "zeros", "ones", "full", "empty", "arange", "linspace", "eye",
    "identity", "tri", "triu_indices", "tril_indices", "from_dlpack", "meshgrid",
    # Their values are NumPy's uninitialised memory (functrans gives zeros).
    "empty_like",
}

#: Functions whose result's shape depends on the values: jit refuses them
#: (ConcretizationError); the eager trace follows them.
DATA_DEPENDENT = {"argwhere", "flatnonzero", "nonzero", "unique", "unique_all",
                  "unique_counts", "unique_inverse", "unique_values", "trim_zeros"}

#: Programs that are not run at one input, and why.
NOT_AT = {
    # NumPy's 0-d fftn returns its argument itself, untransformed (a real array),
    # and its 0-d fftshift raises an unpacking error; functrans transforms the
    # value (a complex array).
    ("fft.fftn", "0-d"): "NumPy returns the 0-d argument itself",
    ("fft.fftshift", "0-d"): "NumPy raises an unpacking error",
    ("argsort", "0-d"): "functrans' argsort refuses the default axis -1 of a 0-d array",
    ("argsort", "scalar"): "functrans' argsort refuses the default axis -1 of a 0-d array",
    ("fft.fftn", "scalar"): "NumPy returns the 0-d argument itself",
    ("fft.fftshift", "scalar"): "NumPy raises an unpacking error",
}


def _cases():
    names = [n for n in fnp.__all__ if n not in NO_ARRAY and callable(getattr(fnp, n, None))
             and not isinstance(getattr(fnp, n), type)]
    cases = {n: ARGUMENTS.get(n, _default(n)) for n in names}
    cases.update(ARGUMENTS)
    return cases


def _default(name):
    return lambda xp, x: getattr(xp, name)(x)


CASES = _cases()


def _program(xp, make, zero_d):
    def f(x):
        y = make(xp, x)
        if isinstance(y, (tuple, list)):
            y = y[0]
        seen = y if zero_d else y.reshape(-1)
        if y.dtype == np.bool_:
            y ^= True
        else:
            y += 1
        return seen, x

    return f


def _inputs(shape):
    if not shape:
        return {"0-d": np.array(1 / 3), "scalar": np.float64(1 / 3)}
    c = (np.arange(np.prod(shape), dtype=float).reshape(shape) + 1) / (np.prod(shape) + 2)
    return {"C": c, "F": np.asfortranarray(c), "transposed": np.ascontiguousarray(c.T).T}


def _run(f, x):
    """``(value, None)`` or ``(None, the error)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(x.copy(order="K") if isinstance(x, np.ndarray) else x), None
    except Exception as error:  # the oracle's refusals are compared below
        return None, error


def _check(name, shape):
    make = CASES[name]
    for kind, x in _inputs(shape).items():
        if (name, kind) in NOT_AT:
            continue
        want, refused = _run(_program(np, make, not shape), x)
        f = _program(fnp, make, not shape)
        for how, run in [("jit", ft.jit(f)), ("vjp", lambda a, f=f: ft.vjp(f, a)[0])]:
            got, error = _run(run, x)
            where = f"{name} of a {kind} {np.shape(x)} input under {how}"
            if refused is not None:
                # (a write into a read-only view, or arguments NumPy refuses)
                assert error is not None, f"{where}: NumPy raises {refused!r}, functrans does not"
                continue
            if isinstance(error, InPlaceUpdateError):
                continue  # refused: functrans cannot tell which NumPy does
            if isinstance(error, ConcretizationError) and how == "jit" and \
                    name in DATA_DEPENDENT:
                continue
            if error is not None:
                raise error
            for g, w in zip(got, want):
                assert type(g) is np.ndarray and np.shape(g) == np.shape(w), where
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=where)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4)], ids=["2-d", "3-d"])
def test_results_are_laid_out_as_numpys(name, shape):
    _check(name, shape)


@pytest.mark.parametrize("name", CASES)
def test_zero_d_results_are_scalars_or_arrays_as_numpys(name):
    _check(name, ())
