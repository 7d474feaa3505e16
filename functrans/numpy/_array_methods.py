"""The array behaviour of tracers: operators, methods, properties, indexing,
``.at``, and NumPy's dispatch protocols.

``functrans.core.Tracer`` is deliberately bare; ``install()``, run when
``functrans.numpy`` is imported, gives it the behaviour of an ndarray by
forwarding every operator and method to the ``functrans.numpy`` function of
the same meaning (``x + y`` is ``fnp.add(x, y)``, ``x.sum(0)`` is
``fnp.sum(x, 0)``), so traced code and eager code share one implementation.
Python scalars reach the functions untouched, so ``f32_tracer * 2.0`` stays
float32 as in NumPy 2, and ``x ** 2`` becomes ``integer_pow``.

``__array_ufunc__`` and ``__array_function__`` make plain NumPy code trace
too: ``np.sin(tracer)`` and ``np.sum(tracer, axis=0)`` run
``fnp.sin``/``fnp.sum``.

The in-place forms (``x += y``, ``x[i] = v``, ``out=``, ``np.add.at``,
``x.sort()``, ``x.fill(v)``, ``x.resize(n)``, ``x.flat``) and the functions
whose results are views are wired to ``functrans.numpy._inplace``, which
gives them NumPy's semantics.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import functrans.numpy as fnp  # mid-import here: its attributes are read at call time
from functrans.core import Tracer, bind_in_wrapper, bind_shared, shared_params, user_frame_summary
from functrans.dtypes import is_inexact
from functrans.numpy import _inplace, _memory_order, _reductions, _shape
from functrans.numpy._array_api_info import TRACE_DEVICE, normalize_device
from functrans.numpy._indexing import IndexUpdateHelper, getitem
from functrans.numpy._scalars import is_scalar, mark_array
from functrans.numpy._ufunc_routes import foreign_target, label, missing_message
from functrans.primitives.elementwise import convert_element_type, integer_pow_p, scalar_pow

#: Inputs that the generated ufunc functions convert to arrays first.
_SEQUENCES = (list, tuple)

#: ``__op__``/``__rop__`` pairs and the ``functrans.numpy`` function behind each.
_BINARY_OPERATORS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}  # fmt: skip
_COMPARISONS = {
    "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
    "gt": "greater", "ge": "greater_equal",
}  # fmt: skip
_UNARY_OPERATORS = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}
_AUGMENTED = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
              "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
              "rshift": ">>"}  # fmt: skip

#: Methods whose signature is the function's with the array first.
_METHODS = [
    "sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "any", "all",
    "cumsum", "cumprod", "clip", "round", "dot", "squeeze", "ravel", "swapaxes", "take",
    "argsort", "argpartition", "diagonal", "trace", "repeat",
]  # fmt: skip

#: The ``functrans.numpy`` reduction computing each ufunc's ``reduce``
#: (``np.add.reduce`` is ``fnp.sum``, NumPy's dtypes included: bools and small
#: integers sum in the default integer), and the identity that ``where=``
#: fills in for the logical ones.
_UFUNC_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                     "logical_and": "all", "logical_or": "any"}
_LOGICAL_IDENTITY = {"all": True, "any": False}


#: Ufunc keywords accepted at their default values (NumPy passes them on as given).
_UFUNC_DEFAULTS = {"dtype": None, "where": True, "casting": "same_kind", "order": "K",
                   "subok": True, "signature": None}


def _reflected(fn: Callable) -> Callable:
    def method(self, other):
        return fn(other, self)

    method.__name__ = f"r{fn.__name__}"
    return method


def _reshape(self, *shape, order="C", copy=None):
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``, as on ndarrays."""
    return fnp.reshape(self, shape[0] if len(shape) == 1 else shape, order=order, copy=copy)


def _transpose(self, *axes):
    """``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``."""
    return fnp.transpose(self, axes[0] if len(axes) == 1 else axes or None)


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """``x.astype(dtype)``: a conversion to ``np.dtype(dtype)`` (so ``None`` and
    ``float`` mean float64, as in NumPy) unless ``x`` already has that dtype.
    ``casting`` is checked as NumPy checks it; ``order`` lays the result out
    in memory as NumPy does (which decides whether a later reshape of it is a
    view); ``subok`` changes nothing."""
    dtype = np.dtype(dtype)
    if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting):
        raise TypeError(
            f"{self._trace.fun_name}: x.astype({dtype.name}, casting={casting!r}) on a traced "
            f"{self.aval.str_short()} array: casting={casting!r} does not allow "
            f"{self.dtype.name} -> {dtype.name} (NumPy's rule); pass casting='unsafe' (the "
            "default) to convert anyway"
        )
    if dtype == self.dtype and not self.weak_type:
        # a copy: a later update of one leaves the other
        return _zero_d_like(self, _memory_order.copy(self, order)) if copy else self
    out = convert_element_type(self, dtype)  # in the order of self, as order='K'
    return _zero_d_like(self, out if order == "K" else _memory_order.copy(out, order))


def _zero_d_like(x, out):
    """``out``, a new array made from ``x`` by a copy or a conversion: a 0-d
    array where ``x`` is one (NumPy's copy of a scalar is a scalar)."""
    return mark_array(out) if x.ndim == 0 and not is_scalar(x) else out


#: The unary operators NumPy refuses for some kinds of dtype (``-`` of bools,
#: ``~`` of floats and complex numbers) with a ``TypeError``, and the way out.
_UNARY_REFUSALS = {
    ("neg", "b"): ("NumPy has no boolean negative", "use ~x or numpy.logical_not(x) for the "
                   "logical negation, or x.astype(int) to negate 0s and 1s"),
    **{("invert", kind): ("NumPy's invert takes only integers and bools", "use "
                          "numpy.logical_not(x) for x == 0, or convert with x.astype(int) first")
       for kind in "fc"},
}


def _unary_operator(op: str, fn: Callable) -> Callable:
    """``-x``, ``~x`` ...: ``fn(x)``, with NumPy's ``TypeError`` where NumPy
    has no loop for ``x``'s dtype, naming the operator and the way out."""
    symbol = {"neg": "-x", "invert": "~x"}.get(op)

    def method(self):
        refusal = _UNARY_REFUSALS.get((op, self.dtype.kind))
        if refusal is not None:
            why, fix = refusal
            raise TypeError(
                f"{self._trace.fun_name}: {symbol} of a traced {self.aval.str_short()} value (at "
                f"{user_frame_summary()}): {why}, and NumPy raises this TypeError too; {fix}")
        return fn(self)

    method.__name__ = f"__{op}__"
    return method


def _augmented(op: str, fn: Callable, compute: Callable | None = None) -> Callable:
    """``x op= y``: NumPy's ``ufunc(x, y, out=x)``, in place on a traced ``x``,
    its value computed by ``compute`` (``fn`` unless the operator computes
    otherwise: ``**=`` takes ``**``'s fast scalar powers, as NumPy's does).
    On a value NumPy holds as a scalar (immutable), ``x op y``: the name is
    rebound to the new value, with NumPy's promotion, and aliases keep the
    old one."""
    ufunc = getattr(np, fn.__name__)
    what = f"x {_AUGMENTED[op]}= v"
    compute = compute or fn

    def method(self, other):
        if self.ndim == 0 and is_scalar(self):
            return compute(self, other)
        return _inplace.update(self, compute(self, other), ufunc, what)

    method.__name__ = f"__i{op}__"
    return method


def _conj(self):
    """``x.conj()``, ``x.conjugate()``: the conjugate of a complex array (a
    new array, or a scalar where it has no axes, as ``np.conj``); a real
    array is its own conjugate, and NumPy's method returns the array itself,
    so an update of the result is an update of ``x``."""
    return fnp.conj(self) if self.dtype.kind == "c" else self


def _flatten(self, order="C"):
    """``x.flatten(order)``: a copy of the elements as a 1-d array, read in
    ``order`` as ``ravel`` reads them."""
    order = _shape.memory_order_arg("flatten", order)
    ravel, _, order = _inplace.in_memory_order(_shape.ravel, np.ravel, self, order)
    return ravel(self, order=order).copy()


def _copy(self, order="C"):
    """``x.copy(order)``: a new array of ``x``'s values, laid out in memory in
    ``order`` as NumPy lays out its copy ('C' by default; None: an order not
    known), which decides whether a later reshape of it is a view."""
    return _zero_d_like(self, _memory_order.copy(self, order))


def _copy_keeping_order(self, memo=None):
    """``copy.copy(x)``, ``copy.deepcopy(x)``: NumPy's copy in ``x``'s order."""
    return _zero_d_like(self, _memory_order.copy(self, "K"))


def _sort(self, axis=-1, kind=None, order=None, *, stable=None):
    """``x.sort()``: sorts ``x`` in place along ``axis``."""
    _inplace.assign(self, fnp.sort(self, axis, kind, order, stable=stable), "x.sort()",
                    fresh=True)


def _partition(self, kth, axis=-1, kind="introselect", order=None):
    """``x.partition(kth)``: partitions ``x`` in place along ``axis`` (sorted
    along it: one valid partition, see ``functrans.numpy.partition``)."""
    if axis is None:  # NumPy's method has no flattened form
        raise TypeError(f"{self._trace.fun_name}: x.partition(kth, axis=None): the method "
                        "partitions along an axis, as NumPy's; give an axis, or call "
                        "np.partition(x, kth, axis=None) for a partitioned flat copy")
    _inplace.assign(self, fnp.partition(self, kth, axis, kind, order), "x.partition(kth)",
                    fresh=True)


def _fill(self, value):
    """``x.fill(value)``: every element of ``x`` becomes ``value``, cast as
    NumPy casts it."""
    value = _inplace.unsafe_cast(value, self)
    _inplace.assign(self, _inplace.fit("x.fill", value, self), "x.fill(value)",
                    fresh=self.ndim > 0)  # a broadcast of the value


def _resize(self, *new_shape, refcheck=True):
    """``x.resize(shape)``: ``x`` takes the new shape in place, its elements
    in C order, cut off or followed by zeros.  As NumPy, refused for a view
    and for an array with views."""
    shape = new_shape[0] if len(new_shape) == 1 else new_shape
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError(
            f"{self._trace.fun_name}: x.resize({', '.join(map(str, shape))}) at "
            f"{user_frame_summary()}: negative "
            "dimensions not allowed, as NumPy says; give every size")
    if self.ndim == 0 and is_scalar(self):
        raise _inplace.scalar_target_error(
            self, "x.resize(shape)", "NumPy resizes a temporary copy, leaving the scalar as it was")
    _inplace.check_current(self, "x.resize(shape)")
    views = [w for w in self._views or () if w() is not None]
    if self._base or views:
        raise ValueError(
            f"{self._trace.fun_name}: x.resize at {user_frame_summary()}: cannot resize an "
            "array that references or is referenced by another array in this way (a view, "
            "or an array with live views); use the np.resize function")
    size = int(np.prod(shape))
    flat = _shape.ravel(self)
    if size <= self.size:
        new = flat[:size]
    else:
        new = _shape.concatenate([flat, np.zeros(size - self.size, self.dtype)])
    new = _shape.reshape(new, shape)
    _inplace.warn_if_input(self, "x.resize(shape)")
    self.rebind(new)


class FlatIter:
    """``x.flat`` of a traced ``x``: reading gives copies, ``x.flat[i] = v``
    writes into ``x`` in place (``v`` repeated as needed, as NumPy does)."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __getitem__(self, idx):
        return fnp.ravel(self.base)[idx].copy()

    def __setitem__(self, idx, value):
        x = self.base
        flat = _shape.ravel(x)
        shape = tuple(getitem(flat, idx).shape)
        values = _inplace.cycled("x.flat", _inplace.unsafe_cast(value, x), math.prod(shape))
        new = flat.at[idx].set(_shape.reshape(values, shape))
        _inplace.assign(x, _shape.reshape(new, tuple(x.shape)), "x.flat[idx] = v")

    def __len__(self):
        return self.base.size

    def __iter__(self):
        return iter(fnp.ravel(self.base).copy())

    def copy(self):
        return _shape.ravel(self.base).copy()


def _set_flat(self, value):
    FlatIter(self)[...] = value


def _array_namespace(self, /, *, api_version=None):
    """The array API namespace of traced arrays: ``functrans.numpy``."""
    if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(
            f"{self._trace.fun_name}: __array_namespace__(api_version={api_version!r}): "
            "functrans.numpy follows the array API standard 2024.12 (and the earlier "
            "versions it contains); pass one of those or None"
        )
    return fnp


def _to_device(self, device, /, *, stream=None):
    """``x.to_device(d)``: a traced array stays where the traced computation
    runs, so only that device (``x.device``, or None) is accepted."""
    if normalize_device("to_device", device) is not None:
        raise ValueError(
            f"{self._trace.fun_name}: x.to_device({device!r}) on a traced "
            f"{self.aval.str_short()} array (at {user_frame_summary()}): a traced "
            "computation runs where its inputs are; move the inputs with "
            "functrans.device_put before the call, or the results after it"
        )
    return self


def _dlpack(self, /, **kwargs):
    raise TypeError(
        f"{self._trace.fun_name}: __dlpack__ of a traced {self.aval.str_short()} array (at "
        f"{user_frame_summary()}): a traced array has no memory to share; pass it to "
        "functrans.numpy functions as it is, or export the function's result"
    )


#: ``integer_pow``'s params of ``x ** 2`` (``shared_params``).
_SQUARE = shared_params(y=2)


def _power(self, other):
    """``x ** y`` as NumPy computes it.  A NumPy scalar's ``**`` with another
    scalar or a Python number is C's ``pow`` (``scalar_pow``).  On an array
    (a 0-d one too) NumPy's fast scalar power sends a Python int 2 to
    ``square`` (whatever the dtype: a bool array squares to int8 where
    ``np.power`` gives int64), and, on a float or complex array, a Python
    float 0.5 to ``sqrt`` and a Python int -1 to ``reciprocal``: not
    ``np.power``'s value everywhere (sqrt(-inf) is NaN and sqrt(-0.0) -0.0
    where float16's power gives +inf and 0.0, and complex powers differ from
    all three: ``(-1+0j) ** 0.5`` is 1j where ``np.power`` gives 6e-17+1j)."""
    if self.ndim == 0 and is_scalar(self):
        if _scalar_operand(other):
            return scalar_pow(self, other)
    elif type(other) is int and other == 2:
        if is_inexact(self.aval.dtype):
            # fnp.square's equation, bound at once: an inexact array has no
            # bool to convert (x ** 2 is the common power).
            return bind_shared(integer_pow_p, _SQUARE, self)
        return fnp.square(self)
    elif is_inexact(self.dtype):
        if type(other) is float and other == 0.5:
            return fnp.sqrt(self)
        if type(other) is int and other == -1:
            return fnp.reciprocal(self)
    return fnp.power(self, other)


def _reflected_power(self, other):
    """``y ** x`` for a traced ``x``: C's ``pow`` where both are scalars (a
    Python number or NumPy scalar ``y``, a NumPy scalar ``x``), as NumPy's
    scalar ``**``; ``np.power`` otherwise."""
    if self.ndim == 0 and is_scalar(self) and _scalar_operand(other):
        return scalar_pow(other, self)
    return fnp.power(other, self)


def _scalar_operand(value: Any) -> bool:
    """Whether ``value`` meets a NumPy scalar's operator as a scalar (which
    NumPy's scalar math computes) rather than as an array (a ufunc)."""
    if type(value) is Tracer:
        return value.ndim == 0 and is_scalar(value)
    return isinstance(value, (bool, int, float, complex, np.generic))


def _divmod(self, other):
    return fnp.floor_divide(self, other), fnp.remainder(self, other)


def _rdivmod(self, other):
    return fnp.floor_divide(other, self), fnp.remainder(other, self)


# -- the NumPy protocols -------------------------------------------------------------


#: The ``functrans.numpy`` function of each ufunc and each NumPy function met
#: so far (``np.sin`` -> ``fnp.sin``): the protocols below run on every NumPy
#: call in traced code, and one dict lookup costs a fraction of finding the
#: function by name.  Only functions found are kept (a missing one raises each
#: time); bounded, since ``np.frompyfunc`` makes new ufuncs.
#: Per NumPy ufunc met: its ``functrans.numpy`` function, and the primitive
#: that function binds where it is one of the generated ones
#: (``_elementwise._unary``/``_binary``), else None.
_UFUNC_TARGETS: dict[Any, tuple[Callable, Any]] = {}
_FUNCTION_TARGETS: dict[Any, Callable] = {}
_TARGETS_MAX = 1024


def _remember(table: dict[Any, Any], key: Any, fn: Any) -> None:
    if len(table) >= _TARGETS_MAX:
        table.clear()
    table[key] = fn


def _array_ufunc(self, ufunc, method: str, *inputs: Any, **kwargs: Any):
    """``np.sin(tracer)`` -> ``fnp.sin(tracer)``; ``out=`` (with ``where=``)
    and ``ufunc.at`` update arrays in place as in NumPy; other ufunc methods
    and keywords (``dtype=``, ...) are refused with the way out."""
    if method == "__call__" and not kwargs:  # the common call: no checks to make
        target = _UFUNC_TARGETS.get(ufunc)
        if target is None:
            fn = _ufunc_target(ufunc)
            if fn is not None:
                target = (fn, getattr(fn, "primitive", None))
                _remember(_UFUNC_TARGETS, ufunc, target)
        if target is not None:
            fn, prim = target
            # A generated function's primitive bound from here, as that
            # function would bind it, where no input is a list or tuple: its
            # frame is then not made, nor looked at for the user's line.
            if prim is not None and type(inputs[0]) not in _SEQUENCES and (
                    len(inputs) == 1 or type(inputs[1]) not in _SEQUENCES):
                return bind_in_wrapper(prim, *inputs)
            return fn(*inputs)
    name = ufunc.__name__
    if method == "at":
        return _inplace.ufunc_at(ufunc, *inputs, **kwargs)
    if method != "__call__":
        return _ufunc_method(self, ufunc, method, inputs, kwargs)
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    refused = sorted(k for k, v in kwargs.items() if not _is_default(k, v))
    if refused:
        raise TypeError(
            f"{label(ufunc)}: keyword arguments {', '.join(refused)} are not "
            f"supported on traced arrays; call functrans.numpy.{name} and use its result, "
            "converted with .astype() if needed"
        )
    if out is not None or where is not True:
        return _ufunc_into(self, ufunc, inputs, out, where)
    fn = _ufunc_target(ufunc)
    if fn is None:
        raise TypeError(
            f"numpy.{name} was applied to a traced array, but functrans.numpy has no "
            f"{name}; write it with the functrans.numpy functions that exist"
            if getattr(ufunc, "__module__", None) == "numpy" else missing_message(ufunc)
        )
    return fn(*inputs)


def _ufunc_into(self, ufunc, inputs: tuple, out: tuple | None, where: Any):
    """``ufunc(*inputs, out=out, where=where)``: the result written into
    ``out`` in place (``functrans.numpy._inplace``)."""
    if out is None or len(out) != 1:
        raise TypeError(
            f"{label(ufunc)}: where= without out= leaves the unselected elements undefined, "
            "and only ufuncs with one output take out= on traced arrays; pass one out= "
            "array, or use functrans.numpy.where")
    result = _array_ufunc(self, ufunc, "__call__", *inputs)
    return _inplace.update(out[0], result, ufunc, f"{label(ufunc)}(..., out=)", where)


def _ufunc_method(self, ufunc, method: str, inputs: tuple, kwargs: dict):
    """``ufunc.reduce``, ``ufunc.accumulate`` and ``ufunc.outer`` of a traced
    array, on the ``functrans.numpy`` functions computing them; ``out=`` is
    written in place as NumPy writes it."""
    name = ufunc.__name__
    what = f"{label(ufunc)}.{method}"
    if method == "outer":
        a, b = (fnp.asarray(x) for x in inputs)
        a = _shape.reshape(a, tuple(a.shape) + (1,) * b.ndim)
        return _array_ufunc(self, ufunc, "__call__", a, b, **kwargs)
    known: dict[str, Any] = (_UFUNC_REDUCTIONS if method == "reduce" else
                             _reductions.ACCUMULATIONS if method == "accumulate" else {})
    if name not in known:
        offered = ", ".join(f"numpy.{n}.{method}" for n in known)
        raise TypeError(
            f"{what} is not supported on traced arrays"
            + (f": only {offered} are" if offered else "")
            + f"; write it with calls of {label(ufunc)} itself on slices or with explicit "
            "axes (reduceat: a list of reductions of slices, stacked)")
    out = kwargs.pop("out", None)
    if type(out) is tuple:
        if len(out) != 1:
            raise ValueError(f"{what}: out= must hold one array, got {len(out)}")
        out = out[0]
    (array,) = inputs
    axis = kwargs.pop("axis", 0)
    dtype = kwargs.pop("dtype", None)
    if method == "accumulate":
        result = _reductions.accumulate(name, array, axis, dtype, **kwargs)
    else:
        result = _reduce_with(what, getattr(fnp, known[name]), array, axis, dtype, **kwargs)
    if out is None:
        return result
    extremum = name in ("maximum", "minimum") and method == "reduce"
    return _inplace.write_out(what, result, out, "extremum" if extremum else "unsafe", False)


def _reduce_with(what: str, fn: Callable, array, axis, dtype, keepdims=False, initial=None,
                 where=True):
    """``ufunc.reduce`` as the reduction ``fn`` (``fnp.sum`` ...) computes it:
    ``dtype`` converts the array first where ``fn`` takes none (NumPy's loop
    of that dtype), and the logical reductions take ``initial`` and ``where``
    as the identity-filled operands NumPy's loop sees."""
    identity = _LOGICAL_IDENTITY.get(fn.__name__)
    if identity is None:
        if fn.__name__ in ("sum", "prod"):
            return fn(array, axis, dtype, keepdims=keepdims, initial=initial, where=where)
        x = array if dtype is None else fnp.asarray(array).astype(dtype)
        return fn(x, axis, keepdims=keepdims, initial=initial, where=where)
    if dtype is not None and np.dtype(dtype) != np.bool_:
        raise TypeError(f"{what}: dtype={np.dtype(dtype)} is not supported (NumPy has no such "
                        "loop for it either); leave dtype out, the result is bool")
    truth = fnp.not_equal(array, 0)
    if where is not True:
        truth = fnp.where(where, truth, identity)
    result = fn(truth, axis, keepdims=keepdims)
    if initial is not None and bool(initial) != identity:
        result = fnp.full_like(result, bool(initial))
    return result


def _ufunc_target(ufunc) -> Callable | None:
    """NumPy's ufuncs go to the ``functrans.numpy`` function of their name; other
    libraries' (SciPy's special functions) by ``_ufunc_routes``' table."""
    if getattr(ufunc, "__module__", None) == "numpy":
        return _lookup(fnp, ufunc.__name__)
    return foreign_target(ufunc)


def _is_default(keyword: str, value: Any) -> bool:
    default = _UFUNC_DEFAULTS.get(keyword, object())
    return value is default or (type(value) is str and value == default)


def _array_function(self, func, types, args, kwargs):
    """``np.sum(tracer, axis=0)`` -> ``fnp.sum(tracer, axis=0)``; the same for
    ``numpy.linalg`` and other submodules that ``functrans.numpy`` mirrors."""
    fn = _FUNCTION_TARGETS.get(func)
    if fn is not None:
        return fn(*args, **kwargs)
    namespace: Any = fnp
    module = getattr(func, "__module__", None) or "numpy"
    for part in module.split(".")[1:]:
        namespace = getattr(namespace, part, None)
    fn = _lookup(namespace, func.__name__)
    if fn is None:
        where = module.replace("numpy", "functrans.numpy", 1)
        raise TypeError(
            f"{module}.{func.__name__} was applied to a traced array, but {where} has "
            f"no function {func.__name__}; write it with the functrans.numpy functions "
            "that exist"
        )
    _remember(_FUNCTION_TARGETS, func, fn)
    return fn(*args, **kwargs)


def _lookup(namespace: Any, name: str) -> Callable | None:
    fn = getattr(namespace, name, None) if not name.startswith("_") else None
    return fn if callable(fn) and not isinstance(fn, type) else None


# -- installing -----------------------------------------------------------------------------


def install() -> None:
    """Give ``Tracer`` its operators, methods and properties."""
    for name, (np_fn, how) in _inplace.VIEW_FUNCTIONS.items():
        setattr(fnp, name, _inplace.viewing(getattr(fnp, name), np_fn, **how))
    for name, (np_fn, how) in _inplace.LINALG_VIEW_FUNCTIONS.items():
        setattr(fnp.linalg, name, _inplace.viewing(getattr(fnp.linalg, name), np_fn, **how))
    fnp.broadcast_arrays = _inplace.broadcast_arrays(fnp.broadcast_arrays)
    for name in _inplace.COPY_FUNCTIONS:
        setattr(fnp, name, _inplace.copying(getattr(fnp, name)))
    for name in _inplace.ARRAY_FUNCTIONS:
        setattr(fnp, name, _inplace.zero_d_array(getattr(fnp, name)))
    wrapped: dict[int, Callable] = {}  # aliases (amax, around) stay one function
    for name in _inplace.OUT_FUNCTIONS:
        module, _, short = name.rpartition(".")
        namespace = getattr(fnp, module) if module else fnp
        fn = getattr(namespace, short)
        if id(fn) not in wrapped:
            wrapped[id(fn)] = _inplace.writing_out(fn, name)
        setattr(namespace, short, wrapped[id(fn)])
    for op, name in _BINARY_OPERATORS.items():
        fn = getattr(fnp, name)
        setattr(Tracer, f"__{op}__", fn)
        setattr(Tracer, f"__r{op}__", _reflected_power if op == "pow" else _reflected(fn))
        setattr(Tracer, f"__i{op}__", _augmented(op, fn, _power if op == "pow" else None))
    for op, name in _COMPARISONS.items():
        setattr(Tracer, f"__{op}__", getattr(fnp, name))
    for op, name in _UNARY_OPERATORS.items():
        fn = getattr(fnp, name)
        setattr(Tracer, f"__{op}__", _unary_operator(op, fn) if op in ("neg", "invert") else fn)
    for name in _METHODS:
        setattr(Tracer, name, getattr(fnp, name))
    extra = {
        "__pow__": _power, "__divmod__": _divmod, "__rdivmod__": _rdivmod,
        "reshape": _reshape, "transpose": _transpose, "astype": _astype,
        "flatten": _flatten, "conj": _conj, "conjugate": _conj,
        "view": _inplace.whole_view, "sort": _sort, "partition": _partition, "fill": _fill,
        "resize": _resize, "copy": _copy,
        "__copy__": _copy_keeping_order, "__deepcopy__": _copy_keeping_order,
        "flat": property(FlatIter, _set_flat, doc="A flat iterator: x.flat[i], x.flat[i] = v."),
        "T": property(fnp.transpose, doc="The array with its axes reversed."),
        "mT": property(lambda self: fnp.swapaxes(self, -1, -2),
                       doc="The array with its last two axes swapped."),
        "real": property(fnp.real, doc="The real part."),
        "imag": property(fnp.imag, doc="The imaginary part."),
        "at": property(IndexUpdateHelper, doc="Functional updates: x.at[idx].set(v)."),
        "__getitem__": _inplace.view_getitem,
        "__setitem__": _inplace.setitem,
        "__array_namespace__": _array_namespace,
        "device": property(lambda self: TRACE_DEVICE,
                           doc="Where the traced computation runs: TRACE_DEVICE."),
        "to_device": _to_device,
        "__dlpack__": _dlpack,
        "__dlpack_device__": _dlpack,
        "__array_ufunc__": _array_ufunc,
        "__array_function__": _array_function,
    }
    for name, value in extra.items():
        setattr(Tracer, name, value)
