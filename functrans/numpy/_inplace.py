"""NumPy's in-place semantics on traced arrays: functionalization.

A traced array updated in place (``x += 1``, ``x[i] = v``, ``np.add(a, b,
out=x)``, ``x.sort()``...) keeps its identity: the ``Tracer`` object stays the
same and is rebound (``Tracer.rebind``) to the variable holding its new value,
so every name, list or dict that holds it sees the update.  A view (what
NumPy returns from basic indexing, ``reshape``, ``.T``, ``ravel``,
``swapaxes``, ``split`` ...) records its root array and the operations that
made it from the root (a ``Link``).  An update through a view becomes a
functional update of the root (a scatter into it), after which every live
view of that root is made again from the root's new value: every later read
of every alias sees the update, and the program the trace records is
ordinary functional code (``scatter``, ``slice``, ``reshape``) that every
transform already handles.

Which results are views follows NumPy: the operations of a view are replayed
on a "shadow" (an ``arange`` of the root's shape, a real NumPy array) when
NumPy's answer depends on the memory layout (``reshape`` of a transposed
view is a copy); the shadow's values are also the flat positions of the
view's elements in the root.  The shadow is laid out in memory as NumPy
would lay out the root (``functrans.numpy._memory_order``: a ufunc's result
keeps its operands' order, so ``(x.T * 1.0).reshape(-1)`` is a copy).  Where
that layout is not known, the decision is recorded as ambiguous, and an
in-place update that would tell a view from a copy while the ambiguous
array lives is refused with the user's line and the fix.

Updates that cannot be followed soundly raise an error naming the user's
line and the fix, never dropping an update: writes into a NumPy array
(which cannot hold a traced value), into a read-only view (as NumPy), into a
view made with a traced integer index, through ``.real``/``.imag`` of a
complex array, and into an array of an enclosing transform from inside a
nested one.  An update that reaches an input of the traced function is
seen by the rest of the function; the caller's array is not changed (a
transformed function is pure), and a ``UserWarning`` naming the line says so
once.

A 0-d value that NumPy would hold as a scalar (``np.sum(x)``, ``x[0]``:
``functrans.numpy._scalars`` tells) is immutable as NumPy's scalars are:
``s += v`` gives a new value, a write into it is NumPy's ``TypeError``, and
no view is made of it.

Nothing here runs for code without in-place updates beyond recording, on
each view, where it came from (``link``).  The bookkeeping lives on the
tracers of one trace, so it is per thread as traces are.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import operator
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from functrans.core import (
    Tracer,
    bind,
    current_trace,
    source_location,
    user_frame_summary,
    user_source,
)
from functrans.errors import FunctransError, MemoryLayoutError
from functrans.numpy import _memory_order
from functrans.numpy._indexing import _scatter, getitem, parse_index
from functrans.numpy._scalars import is_scalar, mark_array
from functrans.numpy._shape import _broadcast_to, _reshape, _transpose, memory_order_arg
from functrans.numpy._util import asarray, broadcasts_to, normalize_axis
from functrans.primitives.elementwise import convert_element_type, select_p
from functrans.primitives.shape import bitcast_convert_type_p, broadcast_in_dim_p

__all__ = ["copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"]


class InPlaceUpdateError(FunctransError, TypeError, ValueError):
    """An in-place update that functrans cannot follow soundly (the message
    names the line and what to write instead).  A ``ValueError`` too, as
    NumPy's refusal of a write into a read-only view is."""


# -- views --------------------------------------------------------------------------------

#: One step from an array to its view: NumPy's function (run on shadows),
#: functrans' function (run on tracers), their arguments, and which item of a
#: list result is the view (``split``), else None.
Op = tuple[Callable, Callable, tuple, dict, Any]


class Link:
    """Where a view comes from: its ``root`` (an array that is no view), the
    ``ops`` making it from the root, and why writing through it is refused
    (``refusal``, else None).  ``index`` caches the flat positions of its
    elements in the root.  ``ambiguous``: where the view was made, if NumPy
    may have made a copy there instead (the root's memory layout is not
    known), else None."""

    __slots__ = ("root", "ops", "refusal", "index", "ambiguous")

    def __init__(self, root: Tracer, ops: tuple[Op, ...], refusal: str | None,
                 index: np.ndarray | None, ambiguous: str | None = None):
        self.root = root
        self.ops = ops
        self.refusal = refusal
        self.index = index
        self.ambiguous = ambiguous

    def positions(self) -> np.ndarray:
        """The flat positions in the root of the view's elements."""
        if self.index is None:
            self.index = _replay_shadow(self.root.shape, self.ops)
        return self.index


def _apply(op: Op, x, numpy: bool):
    np_fn, fn, args, kwargs, item = op
    out = (np_fn if numpy else fn)(x, *args, **kwargs)
    return out if item is None else out[item]


def _replay(x: Any, ops: tuple[Op, ...], numpy: bool) -> Any:
    """``ops`` applied to ``x`` in turn: NumPy's functions, or functrans'."""
    for op in ops:
        x = _apply(op, x, numpy)
    return x


def _replay_shadow(shape: tuple[int, ...], ops: tuple[Op, ...]) -> np.ndarray:
    c_order = tuple(range(len(shape)))
    return np.asarray(_replay(_memory_order.shadow(shape, c_order), ops, numpy=True))


def _owner(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _is_view_of(shadow_out: Any, shadow: np.ndarray) -> bool:
    """Whether ``shadow_out`` (the ``shadow`` root with a view's operations
    replayed) still uses the shadow's memory: NumPy made a view at every
    step, not a copy (a copy made by ``reshape`` is itself a view of a new
    buffer, so the buffers are compared)."""
    if not isinstance(shadow_out, np.ndarray):
        return False  # a NumPy scalar: a copy
    return _owner(shadow_out) is _owner(shadow)


def _positions_if_view(root: Tracer, ops: tuple[Op, ...],
                       order: tuple[int, ...]) -> np.ndarray | None:
    """The flat positions in ``root`` of the elements of the array ``ops``
    make from it, if NumPy makes a view at every step of a root laid out in
    memory in ``order``; None if it copies."""
    shadow = _memory_order.shadow(tuple(root.shape), order)
    res = _replay(shadow, ops, numpy=True)
    return np.asarray(res) if _is_view_of(res, shadow) else None


class _Decision:
    """NumPy's answer to whether ``ops`` make a view of ``root`` when it
    depends on the root's memory layout: ``view`` (and the view's flat
    positions, ``index``), and ``ambiguous`` (the user's line) where the
    layout is not known and a C-contiguous root is assumed."""

    __slots__ = ("view", "index", "ambiguous")

    def __init__(self, root: Tracer, ops: tuple[Op, ...]):
        order = _memory_order.root_order(root)
        c_order = tuple(range(root.ndim))
        self.ambiguous = None
        if order is None:
            order = c_order
            self.ambiguous = user_frame_summary()
        elif order == c_order and len(ops) == 1 and ops[0][3].get("order") != "F":
            # One reshape or ravel of a C-contiguous array: a view; its
            # positions are asked for only by an update through it.
            self.index, self.view = None, True
            return
        self.index = _positions_if_view(root, ops, order)
        self.view = self.index is not None


def link(out: Any, x: Any, op: Op, *, refusal: str | None = None,
         layout: bool = False) -> None:
    """Record that ``out`` is a view of ``x`` made by ``op``.  ``layout``: NumPy
    makes a view only where the memory layout allows (``reshape``), decided
    on the shadow when ``x`` is itself a view (an array that is no view is
    C-contiguous).  ``refusal``: why NumPy refuses writes through it."""
    if out is x or type(out) is not Tracer or type(x) is not Tracer:
        return
    parent = x._base
    if not parent:
        root, ops, inherited = x, (op,), None
    else:
        root, ops, inherited = parent.root, parent.ops + (op,), parent.refusal
    if out._trace is not root._trace:
        inherited = inherited or _enclosing_refusal(root)
    index = ambiguous = None
    if layout and _layout_matters(root, parent):
        decision = _Decision(root, ops)
        if decision.ambiguous is not None:
            # A view or a copy in NumPy, as its layout is: followed as a view,
            # and an update while it lives is refused (``_refuse_ambiguous``).
            ambiguous = decision.ambiguous
            _AMBIGUOUS_ROOTS[root] = True
        elif not decision.view:
            return  # NumPy copies here: out is an array of its own
        index = decision.index
    out._base = Link(root, ops, refusal or inherited, index, ambiguous)
    views = root._views
    if views is None:
        views = root._views = []
    if len(views) >= 32 and len(views) & (len(views) - 1) == 0:  # at powers of two
        views[:] = [w for w in views if w() is not None]
    views.append(weakref.ref(out))


def _layout_matters(root: Tracer, parent: Any) -> bool:
    """Whether NumPy's view-or-copy answer may depend on ``root``'s layout: a
    view of it may be non-contiguous, and a root of two or more axes of two
    or more elements may be laid out in another order than C's (a root of
    one such axis is contiguous in every order)."""
    return bool(parent) or _memory_order.significant(tuple(root.shape)) > 1


#: The roots with an ambiguous view (NumPy's view or copy unknown): an update
#: of one asks ``_refuse_ambiguous``.
_AMBIGUOUS_ROOTS = _memory_order.ByIdentity()


def _refuse_ambiguous(root: Tracer, what: str) -> None:
    """Refuse ``what``, an update of ``root`` or one of its views, while a
    view of it lives that NumPy may have made a copy instead of."""
    for ref in root._views or ():
        view = ref()
        if view is None or not view._base or view._base.ambiguous is None:
            continue
        raise InPlaceUpdateError(
            f"{root._trace.fun_name}: {what} (at {user_frame_summary()}) updates an array "
            f"that the reshape or ravel at {view._base.ambiguous} shares memory with or not, "
            f"as NumPy lays the {root.aval.str_short()} array out in memory, which functrans "
            "does not know here (a ufunc's result keeps its operands' memory order, other "
            "functions have rules of their own, and an argument sliced with a step has "
            "gaps). Say which is meant: .copy() the reshaped "
            "array for a copy, or make the array C-ordered with .copy() before reshaping it "
            "for a view")


def _enclosing_refusal(root: Tracer) -> str:
    return (f"the array belongs to the enclosing traced function {root._trace.fun_name!r}, "
            "and a nested transform's function cannot write into it. Return the new value "
            "from the nested function and update the array after it")


# -- updates -------------------------------------------------------------------------------


def assign(target: Any, new: Any, what: str, fresh: bool = False) -> Any:
    """Make ``target`` hold ``new`` (of ``target``'s shape and dtype) in
    place, as NumPy's in-place operation ``what`` does, and return
    ``target``: its root is updated functionally and every live view of the
    root is made again from the root's new value.  ``fresh``: ``new`` is a
    value made for this update alone (no other array holds it)."""
    if type(target) is not Tracer:
        raise _numpy_target_error(target, what)
    if target.ndim == 0 and is_scalar(target):
        raise scalar_target_error(target, what)
    link_ = target._base or None
    root = target if link_ is None else link_.root
    check_current(root, what)
    if root in _AMBIGUOUS_ROOTS:
        _refuse_ambiguous(root, what)
    new = asarray(new)
    if type(new) is not Tracer:
        new = target._trace.constant(np.array(new))  # concrete values written in
    if link_ is None:
        root_new = new
    else:
        if link_.refusal is not None:
            raise InPlaceUpdateError(
                f"{target._trace.fun_name}: {what} writes through a view of a traced array "
                f"(at {user_frame_summary()}), but {link_.refusal}"
            )
        root_new = _write_back(root, link_, new)
    warn_if_input(root, what)
    # NumPy updates the root's memory: its new value keeps its layout.
    _memory_order.note_update(root, root_new._var, shared=link_ is None and not fresh)
    root.rebind(root_new)
    if target is not root:
        target.rebind(new)
    _refresh_views(root, target)
    return target


def check_current(root: Tracer, what: str) -> None:
    """Refuse ``what``, an update of ``root`` (an array that is no view), unless
    it belongs to the function being traced now (not an enclosing one)."""
    if root._trace is not current_trace():
        raise InPlaceUpdateError(
            f"{root._trace.fun_name}: {what} (at {user_frame_summary()}) updates a traced "
            f"{root.aval.str_short()} array, but {_enclosing_refusal(root)}"
        )


def _write_back(root: Tracer, link_: Link, new: Tracer) -> Tracer:
    """The root's value with the view's elements replaced by ``new``."""
    ops = link_.ops
    if len(ops) == 1 and ops[0][0] is operator.getitem:  # one basic index: scatter there
        return _scatter(root, ops[0][2][0], new, "set")
    positions = link_.positions()
    flat = _reshape(root, (root.size,))
    values = _reshape(new, (new.size,))
    return _reshape(_scatter(flat, positions.reshape(-1), values, "set"), tuple(root.shape))


def _refresh_views(root: Tracer, updated: Tracer) -> None:
    """Make every live view of ``root`` (but ``updated``, which holds its value
    already) again from the root's new value."""
    views = root._views
    if not views:
        return
    for ref in views:
        view = ref()
        if view is None or view is updated or view._trace is not root._trace:
            continue
        view.rebind(_replay(root, view._base.ops, numpy=False))


def _is_input(t: Tracer) -> bool:
    """Whether ``t`` is one of its trace's inputs as the transform made it (a
    copy of an input is not; an updated input no longer stands for its input
    variable)."""
    if t._base is not None:
        return False
    trace = t._trace
    known = _INPUT_VARS.get(trace)
    if known is None or len(known) != len(trace.invars):
        known = _INPUT_VARS[trace] = {id(v) for v in trace.invars}
    return id(t._var) in known


#: The ids of each live trace's input variables (an update asks on every call).
_INPUT_VARS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


#: The lines warned about (``warnings``' registry for ``warn_explicit``): once each.
_warned: dict = {}


def warn_if_input(root: Tracer, what: str) -> None:
    if not _is_input(root):
        return
    source = user_source()
    file, line, _ = source_location(source) if source else ("<unknown>", 0, "")
    warnings.warn_explicit(
        f"{root._trace.fun_name}: {what} at {file}:{line} updates an input of the traced "
        f"function ({root.aval.str_short()}). The rest of the function sees the update, but "
        "the caller's array is not changed: transformed functions are pure. Update a copy "
        "(x = x.copy()) to make this explicit, or return the new value",
        UserWarning, file, line, registry=_warned,
    )


def scalar_target_error(target: Tracer, what: str, numpy_does: str = "") -> InPlaceUpdateError:
    """The error for ``what`` writing into ``target``, a value NumPy holds as
    an immutable scalar (``numpy_does``: what NumPy says or does about it)."""
    kind = f"numpy.{target.dtype.name}"
    numpy_does = f" ({numpy_does})" if numpy_does else ""
    return InPlaceUpdateError(
        f"{target._trace.fun_name}: {what} (at {user_frame_summary()}) writes into a traced "
        f"{target.aval.str_short()} value that NumPy holds as a {kind} scalar, which cannot "
        f"be changed in place{numpy_does}. Give the name a new value "
        "instead (s = v, s = s + v), or make a 0-d array of it first to update it in place "
        "(s = np.copy(s), or functrans.numpy.array(s))")


def _numpy_target_error(target: Any, what: str) -> InPlaceUpdateError:
    trace = current_trace()
    name = f"{trace.fun_name}: " if trace is not None else ""
    return InPlaceUpdateError(
        f"{name}{what} (at {user_frame_summary()}) would write a traced value into a "
        f"{type(target).__module__}.{type(target).__name__}, which cannot hold one (the "
        "update would be lost). Make the array a traced value instead: write y = y + x "
        "rather than y += x, y = functrans.numpy.at(y)[idx].set(x) rather than y[idx] = x, "
        "and use the result"
    )


# -- casting ---------------------------------------------------------------------------------


#: NumPy's error for an output it cannot cast (a ``UFuncTypeError``).
_OutputCastingError: Any = np._core._exceptions._UFuncOutputCastingError  # type: ignore[attr-defined]


def cast_for_update(result: Any, target: Any, ufunc: Any):
    """``result`` as ``target``'s dtype, if NumPy's ``same_kind`` rule for
    outputs allows it (else NumPy's own ``UFuncTypeError``, with the user's
    line)."""
    to = target.dtype
    if result.dtype == to:
        return result
    if not np.can_cast(result.dtype, to, "same_kind"):
        error = _OutputCastingError(ufunc, "same_kind", np.dtype(result.dtype), np.dtype(to), 0)
        error.add_note(
            f"(at {user_frame_summary()}) NumPy refuses this in-place update as well: cast "
            f"the value first (.astype({to.name})) or make the array {result.dtype}")
        raise error
    return convert_element_type(result, to)


def fit(name: str, value: Any, target: Any) -> Any:
    """``value`` broadcast to ``target``'s shape (NumPy's error if it cannot be)."""
    value = asarray(value)
    shape = tuple(target.shape)
    if tuple(value.shape) == shape:
        return value
    if not broadcasts_to(tuple(value.shape), shape):
        raise ValueError(
            f"{name}: non-broadcastable output operand with shape {shape} doesn't match the "
            f"broadcast shape {tuple(value.shape)} (at {user_frame_summary()})")
    dims = tuple(range(len(shape) - value.ndim, len(shape)))
    return bind(broadcast_in_dim_p, value, shape=shape, broadcast_dimensions=dims)


def update(target: Any, result: Any, ufunc: Any, what: str, where: Any = True) -> Any:
    """``target`` after ``ufunc(..., out=target, where=where)`` gave ``result``:
    NumPy's casting and broadcasting rules, then ``assign``."""
    if type(target) is not Tracer:
        if isinstance(result, Tracer) or isinstance(where, Tracer):
            raise _numpy_target_error(target, what)
        np.copyto(target, result, casting="same_kind", where=where)
        return target
    if target.ndim == 0 and is_scalar(target):
        raise scalar_target_error(target, what, "NumPy says return arrays must be of ArrayType")
    value = cast_for_update(fit(what, result, target), target, ufunc)
    if where is not True:
        value = bind(select_p, _where_mask(what, where, target), value, target)
    return assign(target, value, what)


def _where_mask(what: str, where: Any, target: Any) -> Any:
    """``where=`` as a bool mask of ``target``'s shape.  NumPy converts a
    Python or NumPy scalar or a list to bool, and refuses an array of
    another dtype (it casts by ``safe``), as this does for a traced one."""
    mask = asarray(where)
    if mask.dtype != np.bool_ and (isinstance(where, (np.ndarray, Tracer))):
        raise TypeError(
            f"{what}: cannot cast array data from {mask.dtype!r} to dtype('bool') according "
            f"to the rule 'safe' (at {user_frame_summary()}), as NumPy says of where=: pass a "
            f"bool array (where=mask != 0)")
    return _as_bool(fit(what, mask, target))


def _as_bool(x):
    return x if x.dtype == np.bool_ else convert_element_type(x, np.bool_)


#: The values NumPy's assignment converts one by one, each by its own rule.
_PYTHON_VALUES = (bool, int, float, complex, list, tuple)


def unsafe_cast(value: Any, target: Any) -> Any:
    """``value`` converted to ``target``'s dtype as NumPy's assignment does.
    A concrete value is written by NumPy itself, so its errors stay: a Python
    integer out of the dtype's range, or a Python float NaN or infinity
    written into integers, is refused (an array's values are cast, as NumPy
    casts them)."""
    converted = asarray(value)
    if converted.dtype.kind == "c" and target.dtype.kind != "c":
        raise TypeError(
            f"cannot write complex values into a {target.dtype} array (at "
            f"{user_frame_summary()}); take .real of the values or convert the array first")
    if isinstance(converted, np.ndarray):  # concrete, on the host
        return _numpy_assigned(operator.setitem, value, converted, target.dtype)
    if converted.dtype == target.dtype:
        return converted
    return convert_element_type(converted, target.dtype)


def _numpy_assigned(how: Callable, value: Any, converted: np.ndarray, dtype: Any) -> np.ndarray:
    """The concrete ``value`` (``converted`` by ``asarray``) as ``dtype``,
    converted by NumPy itself the way ``how`` (``operator.setitem`` for
    ``x[...] = value``, ``np.copyto``) converts it, NumPy's errors included."""
    out = np.empty(converted.shape, dtype)
    source = value if type(value) in _PYTHON_VALUES else converted
    try:
        if how is np.copyto:
            np.copyto(out, source, casting="unsafe")
        else:
            out[...] = source
    except (OverflowError, ValueError) as error:
        raise type(error)(f"{error} (at {user_frame_summary()}), as NumPy says: write a value "
                          f"that a {np.dtype(dtype)} array can hold") from None
    return out


# -- out= of NumPy's functions that are not ufuncs ------------------------------------------

#: How each ``functrans.numpy`` function (``linalg.`` ones so named) that takes
#: NumPy's ``out=`` writes its result there, as NumPy's function does: the
#: casting rule, and whether the result broadcasts to ``out``'s shape (else the
#: shapes must be equal).
#: NumPy computes in the result's own dtype, then casts into ``out``; its
#: rules differ per function (checked against NumPy):
#:
#: - ``"unsafe"``: any cast (complex to real keeps the real part, with NumPy's
#:   ``ComplexWarning``);
#: - ``"same_kind"``: NumPy's rule of that name, where NumPy ends in a ufunc
#:   (the quantiles' ``add``);
#: - ``"keyword"``: the function's ``casting=`` keyword;
#: - ``"exact"``: ``out`` has the result's dtype (``dot``);
#: - ``"index"``: ``out`` casts safely to ``intp`` (the arg-reductions);
#: - ``"take"``: ``out`` casts safely to the array's dtype;
#: - ``"extremum"``: a safe cast, or one rounding real values into a float.
#:   NumPy's maxima and minima compare the values cast into ``out``'s dtype at
#:   some calls and before the cast at others, so a cast that wraps or
#:   truncates is refused rather than guessed.
#:
#: The functions themselves take ``out`` for NumPy's argument positions only:
#: ``writing_out``, installed on ``functrans.numpy``, writes it.  Functions
#: whose NumPy writes into ``out`` in steps take ``out`` themselves and follow
#: those steps: ``mean``, ``var``, ``std``, ``median`` and their ``nan`` forms
#: (the total into ``out``, then divided there), ``ptp`` (the maxima, then
#: less the minima), ``round`` (scaled into ``out``, rounded and scaled back
#: there), ``einsum`` (computed in the operands' and ``out``'s common dtype) and
#: ``clip`` (NumPy's ufunc in disguise).
OUT_FUNCTIONS: dict[str, tuple[str, bool]] = {
    **dict.fromkeys(["sum", "prod", "all", "any", "trace", "cumsum", "cumprod",
                     "cumulative_sum", "cumulative_prod", "nansum", "nanprod", "nancumsum",
                     "nancumprod"], ("unsafe", False)),
    **dict.fromkeys(["max", "min", "amax", "amin", "nanmax", "nanmin"], ("extremum", False)),
    **dict.fromkeys(["nanmedian", "nanquantile", "nanpercentile"], ("unsafe", True)),
    **dict.fromkeys(["quantile", "percentile", "outer", "matmul"], ("same_kind", True)),
    **dict.fromkeys(["concatenate", "concat", "stack"], ("keyword", False)),
    **dict.fromkeys(["dot", "linalg.multi_dot"], ("exact", False)),
    **dict.fromkeys(["argmax", "argmin", "nanargmax", "nanargmin"], ("index", False)),
    "take": ("take", False),
}  # fmt: skip


def writing_out(fn: Callable, name: str) -> Callable:
    """``fn`` (the ``functrans.numpy`` function ``name`` of ``OUT_FUNCTIONS``)
    taking NumPy's ``out=``, by keyword or at its position: the result is
    written into ``out`` (a traced array, or a NumPy array on concrete
    values) by ``write_out``, and ``out`` itself is returned."""
    casting, broadcast = OUT_FUNCTIONS[name]
    params = list(inspect.signature(fn).parameters.values())
    position = next((i for i, p in enumerate(params) if p.name == "out"
                     and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD), None)
    keyword_default = next((p.default for p in params if p.name == "casting"), None)

    @functools.wraps(fn)
    def out_fn(*args, **kwargs):
        if position is not None and len(args) > position:
            out = args[position]
            args = args[:position] + (None,) + args[position + 1:]
        else:
            out = kwargs.pop("out", None)
        if out is None:
            return fn(*args, **kwargs)
        rule = kwargs.get("casting", keyword_default) if casting == "keyword" else casting
        if casting == "keyword" and kwargs.get("dtype") is not None:
            raise TypeError(f"{name}: pass out= or dtype=, not both (as NumPy says); the "
                            "result takes out's dtype, so leave dtype= out")
        if name in _UNBUFFERED:
            _refuse_overlap(name, out, args[0] if args else kwargs.get("arrays"))
        return write_out(name, fn(*args, **kwargs), out, rule, broadcast,
                         args[0] if casting == "take" else None)

    return out_fn


#: The functions of ``OUT_FUNCTIONS`` whose NumPy writes into ``out`` while it
#: still reads its inputs (``concatenate`` copies one array after another),
#: so that NumPy's answer for an ``out`` sharing memory with an input depends
#: on that order.
#: Every other function's NumPy copies an input that overlaps ``out`` first.
_UNBUFFERED = frozenset({"concatenate", "concat", "stack"})


def _refuse_overlap(name: str, out: Any, inputs: Any) -> None:
    """Refuse ``name(inputs, out=out)`` where ``out`` shares elements with one
    of ``inputs`` (an array, or a list of arrays)."""
    for x in inputs if type(inputs) in (list, tuple) else (inputs,):
        if _may_share_memory(out, x):
            raise InPlaceUpdateError(
                f"{out._trace.fun_name}: {name}(..., out=) (at {user_frame_summary()}) writes "
                "into an array that shares memory with one of its inputs, and NumPy's answer "
                f"then depends on the order its {name} reads and writes in; pass a copy of that "
                "input (.copy()), or use the result of the call without out=")


def _may_share_memory(a: Any, b: Any) -> bool:
    """Whether the traced arrays ``a`` and ``b`` share an element (views of one
    root at common positions)."""
    if type(a) is not Tracer or type(b) is not Tracer or not a.size or not b.size:
        return False
    root = a._base.root if a._base else a
    if root is not (b._base.root if b._base else b):
        return False
    if not a._base or not b._base:
        return True  # one is the whole root
    if any(op[0] is _bitcast_shadow for op in a._base.ops + b._base.ops):
        return True  # a view as another dtype: its positions do not stand for root elements
    return np.intersect1d(a._base.positions(), b._base.positions()).size > 0


def write_out(name: str, result: Any, out: Any, casting: str, broadcast: bool,
              array: Any = None) -> Any:
    """``out`` after NumPy's ``name(..., out=out)`` gave ``result``: the
    result cast by ``casting`` (a rule of ``OUT_FUNCTIONS``; ``array``: the
    array ``take`` takes from) and, where ``broadcast`` (``OUT_FUNCTIONS``'
    second rule), broadcast to ``out``'s shape, is written into ``out`` in
    place (``assign``).  NumPy
    computes as if ``out`` shared no memory with the inputs (it buffers where
    they overlap), and so does this: the result is complete before it is
    written."""
    what = f"{name}(..., out=)"
    label = _label(name)
    _check_out_type(label, out)
    result = asarray(result)
    _check_out_cast(label, name, casting, result.dtype, out.dtype, array)
    if broadcast:
        value = fit(what, result, out)
    elif tuple(result.shape) != tuple(out.shape):
        raise ValueError(
            f"{label}: out= has shape {tuple(out.shape)}, but the result has shape "
            f"{tuple(result.shape)} (at {user_frame_summary()}); NumPy refuses this too: pass "
            "an out of the result's shape (keepdims=True keeps the reduced axes)")
    else:
        value = result
    if isinstance(out, np.ndarray):
        if isinstance(value, Tracer):
            raise _numpy_target_error(out, what)
        np.copyto(out, value, casting="unsafe")
        return out
    if value.dtype != out.dtype:
        value = convert_element_type(value, out.dtype)
    return assign(out, value, what)


def _label(name: str) -> str:
    """``name`` prefixed by the traced function's name, where one is traced."""
    trace = current_trace()
    return f"{trace.fun_name}: {name}" if trace is not None else name


def _check_out_type(label: str, out: Any) -> None:
    if type(out) is not Tracer and not isinstance(out, np.ndarray):
        raise TypeError(
            f"{label}: out= must be an array (NumPy says: return arrays must be of "
            f"ArrayType), got a {type(out).__name__}; pass an array of the result's shape")


def check_sized_out(name: str, shape: tuple[int, ...], out: Any) -> None:
    """Refuse an ``out`` for a result of ``shape`` where NumPy's ``name``
    (``round``, which checks the sizes and then writes with ufuncs) does: one
    that is not an array, or one of another number of elements."""
    label = _label(name)
    _check_out_type(label, out)
    if math.prod(shape) != math.prod(out.shape):
        raise ValueError(
            f"{label}: out= has shape {tuple(out.shape)}, but the result has shape "
            f"{tuple(shape)} (at {user_frame_summary()}); NumPy refuses an out of another "
            f"size too (invalid output shape): pass an out of {math.prod(shape)} elements")


def _check_out_cast(label: str, name: str, casting: Any, have: np.dtype, to: np.dtype,
                    array: Any) -> None:
    """Refuse an ``out`` of dtype ``to`` for a result of dtype ``have`` where
    NumPy's rule ``casting`` (of ``OUT_FUNCTIONS``) for its function ``name``
    does, with NumPy's exception type (``label`` names the function in the
    message)."""
    have, to = np.dtype(have), np.dtype(to)
    if casting == "unsafe":
        return
    if casting == "exact":
        if have != to:
            raise ValueError(
                f"{label}: out= has dtype {to}, but the result has dtype {have}; NumPy's {name} "
                f"accepts only an out of the result's dtype (as NumPy says: output array is not "
                f"acceptable): pass a {have} array, or cast the result with .astype")
        return
    if casting == "extremum":
        # Rounding into a float is monotone: the maxima agree either way.
        if not np.can_cast(have, to, "safe") and not (have.kind in "biuf" and to.kind in "fc"):
            raise TypeError(
                f"{label}: out= has dtype {to}, which does not hold every {have} value of the "
                f"result; NumPy compares the values after casting them into out's dtype at some "
                f"calls and before at others, so its answer here depends on the loop it picks: "
                f"pass an out of dtype {have} (or one it casts to safely), and cast that")
        return
    if casting == "index":
        ok, why = np.can_cast(to, np.intp, "safe"), f"indices ({np.dtype(np.intp)})"
    elif casting == "take":
        source = np.dtype(getattr(array, "dtype", None) or np.asarray(array).dtype)
        ok, why = np.can_cast(to, source, "safe"), f"the array's elements ({source})"
    else:
        ok, why = np.can_cast(have, to, casting), f"the result ({have}) by casting={casting!r}"
    if not ok:
        raise TypeError(
            f"{label}: out= has dtype {to}, which NumPy's {name} refuses for {why}; pass an out "
            f"of dtype {have}, or cast the result with .astype")


# -- NumPy's in-place functions -------------------------------------------------------------


def copyto(dst, src, casting="same_kind", where=True):
    """``numpy.copyto``: ``dst[...] = src`` where ``where`` holds, with
    NumPy's ``casting`` rule; ``dst`` may be traced (updated in place).

    >>> import numpy as np
    >>> a = np.zeros(3)
    >>> copyto(a, [1.0, 2.0, 3.0], where=[True, False, True]); a
    array([1., 0., 3.])
    """
    if type(dst) is not Tracer:
        if isinstance(src, Tracer) or isinstance(where, Tracer):
            raise _numpy_target_error(dst, "copyto(dst, src)")
        np.copyto(dst, src, casting=casting, where=where)
        return None
    given, src = src, asarray(src)
    if src.dtype != dst.dtype and not np.can_cast(src.dtype, dst.dtype, casting):
        raise TypeError(
            f"copyto: cannot cast array data from {src.dtype!r} to {dst.dtype!r} according "
            f"to the rule {casting!r} (at {user_frame_summary()}), as NumPy says")
    if isinstance(src, np.ndarray):  # NumPy converts it: a Python integer out of range is its error
        src = _numpy_assigned(np.copyto, given, src, dst.dtype)
    value = fit("copyto", src, dst)
    value = value if value.dtype == dst.dtype else convert_element_type(value, dst.dtype)
    if where is not True:
        value = bind(select_p, _where_mask("copyto", where, dst), value, dst)
    assign(dst, value, "copyto(dst, src)")
    return None


def cycled(name: str, values, n: int):
    """``values`` flattened and repeated to ``n`` elements (NumPy's rule for
    ``put``, ``place`` and ``putmask``)."""
    values = asarray(values)
    flat = _reshape(values, (values.size,))
    if n == 0:
        return flat[:0]
    if values.size == 0:
        raise ValueError(f"{name}: cannot write {n} elements from empty values (as NumPy)")
    reps = -(-n // values.size)
    if reps > 1:
        flat = bind(broadcast_in_dim_p, flat, shape=(reps, values.size),
                    broadcast_dimensions=(1,))
        flat = _reshape(flat, (reps * values.size,))
    return flat[:n] if reps * values.size != n else flat


def put(a, ind, v, mode="raise"):
    """``numpy.put``: ``a.flat[ind] = v``, ``v`` repeated as needed; ``mode``
    'raise', 'wrap' or 'clip' treats out-of-range indices as NumPy does.

    >>> import numpy as np
    >>> a = np.zeros(4)
    >>> put(a, [0, 2], [5.0]); a
    array([5., 0., 5., 0.])
    """
    if type(a) is not Tracer:
        if isinstance(v, Tracer) or isinstance(ind, Tracer):
            raise _numpy_target_error(a, "put(a, ind, v)")
        np.put(a, ind, v, mode=mode)
        return None
    ind = asarray(ind)
    if ind.size == 0 and type(ind) is not Tracer:
        ind = ind.astype(np.intp)  # put(a, [], []): no index (a float64 array of none)
    index = _reshape(ind, (ind.size,)) if ind.ndim != 1 else ind
    n = a.size
    if mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = np.clip(index, 0, n - 1) if type(index) is not Tracer else \
            index.clip(0, n - 1)
    elif mode != "raise":
        raise ValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    values = cycled("put", unsafe_cast(v, a), index.size)
    flat = _reshape(a, (n,))
    new = _reshape(_scatter(flat, index, values, "set"), tuple(a.shape))
    assign(a, new, "put(a, ind, v)")
    return None


def place(arr, mask, vals):
    """``numpy.place``: the elements of ``arr`` where the (concrete) ``mask``
    is true get ``vals`` in turn, repeated as needed.

    >>> import numpy as np
    >>> a = np.arange(4.0)
    >>> place(a, a > 1, [9.0]); a
    array([0., 1., 9., 9.])
    """
    if type(arr) is not Tracer:
        if isinstance(vals, Tracer) or isinstance(mask, Tracer):
            raise _numpy_target_error(arr, "place(arr, mask, vals)")
        np.place(arr, mask, vals)
        return None
    mask = np.asarray(mask, dtype=bool)  # concrete: it decides how many values are taken
    _check_mask_size("place(arr, mask, vals)", mask, arr)
    positions = np.flatnonzero(mask)
    if positions.size and asarray(vals).size == 0:
        raise ValueError("place: cannot insert from an empty array! (as NumPy)")
    values = cycled("place", unsafe_cast(vals, arr), positions.size)
    flat = _reshape(arr, (arr.size,))
    new = _reshape(_scatter(flat, positions, values, "set"), tuple(arr.shape))
    assign(arr, new, "place(arr, mask, vals)")
    return None


def _check_mask_size(what: str, mask: Any, a: Tracer) -> None:
    """NumPy's rule for ``place`` and ``putmask``: the mask has the array's
    size, in any shape (it is read in C order); it is not broadcast."""
    if mask.size != a.size:
        raise ValueError(
            f"{a._trace.fun_name}: {what} (at {user_frame_summary()}): mask and data must be "
            f"the same size, as NumPy says; the mask has {mask.size} elements, the array "
            f"{a.size}. Broadcast the mask first (np.broadcast_to(mask, a.shape))")


def putmask(a, mask, values):
    """``numpy.putmask``: ``a.flat[i] = values.flat[i % len(values)]`` where
    ``mask`` is true; ``mask`` may be traced.

    >>> import numpy as np
    >>> a = np.arange(4.0)
    >>> putmask(a, a > 1, [7.0, 8.0]); a
    array([0., 1., 7., 8.])
    """
    if type(a) is not Tracer:
        if isinstance(values, Tracer) or isinstance(mask, Tracer):
            raise _numpy_target_error(a, "putmask(a, mask, values)")
        np.putmask(a, mask, values)
        return None
    mask = asarray(mask)
    _check_mask_size("putmask(a, mask, values)", mask, a)
    mask = _reshape(mask, tuple(a.shape))
    values = cycled("putmask", unsafe_cast(values, a), a.size)
    values = _reshape(values, tuple(a.shape))
    assign(a, bind(select_p, _as_bool(mask), values, a), "putmask(a, mask, values)")
    return None


def fill_diagonal(a, val, wrap=False):
    """``numpy.fill_diagonal``: the elements ``a[i, i, ..., i]`` of an array of
    two or more axes (all of one length beyond two axes) get ``val``'s
    elements in turn, repeated as needed; ``wrap``: a tall matrix's diagonal
    starts again below the square part, as NumPy's does.

    >>> import numpy as np
    >>> a = np.zeros((2, 3))
    >>> fill_diagonal(a, [1.0, 2.0]); a
    array([[1., 0., 0.],
           [0., 2., 0.]])
    """
    if type(a) is not Tracer:
        if isinstance(val, Tracer):
            raise _numpy_target_error(a, "fill_diagonal(a, val)")
        np.fill_diagonal(a, val, wrap)
        return None
    if a.ndim < 2:
        raise ValueError(
            f"{a._trace.fun_name}: fill_diagonal(a, val) (at {user_frame_summary()}): array "
            f"must be at least 2-d, as NumPy says; got a {a.aval.str_short()} array. Write "
            "a[i] = v for the elements of a 1-d array")
    shape = tuple(a.shape)
    if a.ndim == 2:
        step = shape[1] + 1
        end = None if wrap else shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise ValueError(
                f"{a._trace.fun_name}: fill_diagonal(a, val) (at {user_frame_summary()}): All "
                f"dimensions of input must be of equal length, as NumPy says; got shape "
                f"{shape}. Fill a square slice of the array instead")
        step = 1 + int(np.cumprod(shape[:-1]).sum())
        end = None
    positions = np.arange(a.size)[:end:step]
    values = unsafe_cast(val, a)
    if values.size == 0:
        return None  # NumPy writes nothing from no values
    values = cycled("fill_diagonal", values, positions.size)
    flat = _reshape(a, (a.size,))
    new = _reshape(_scatter(flat, positions, values, "set"), shape)
    assign(a, new, "fill_diagonal(a, val)")
    return None


def put_along_axis(arr, indices, values, axis):
    """``numpy.put_along_axis``: ``values`` written into ``arr`` at ``indices``
    along ``axis``, the other axes broadcast between ``indices`` and ``arr``
    (``axis=None``: into the flattened array, ``indices`` 1-d); the last write
    wins where an index repeats, as in NumPy.

    >>> import numpy as np
    >>> a = np.zeros((2, 3))
    >>> put_along_axis(a, np.array([[2], [0]]), 5.0, axis=1); a
    array([[0., 0., 5.],
           [5., 0., 0.]])
    """
    what = "put_along_axis(arr, indices, values, axis)"
    if type(arr) is not Tracer:
        if isinstance(values, Tracer) or isinstance(indices, Tracer):
            raise _numpy_target_error(arr, what)
        np.put_along_axis(arr, indices, values, axis)
        return None
    indices = asarray(indices)
    if indices.dtype.kind not in "iu":
        raise IndexError(
            f"{arr._trace.fun_name}: {what} (at {user_frame_summary()}): `indices` must be an "
            f"integer array, as NumPy says; got dtype {indices.dtype}. Convert them with "
            ".astype(int)")
    shape = tuple(arr.shape)
    if axis is None:
        if indices.ndim != 1:
            raise ValueError(
                f"{arr._trace.fun_name}: {what} (at {user_frame_summary()}): when axis=None, "
                f"`indices` must have a single dimension, as NumPy says; got shape "
                f"{tuple(indices.shape)}. Ravel them, or give an axis")
        flat = _reshape(arr, (arr.size,))
        new = _scatter(flat, indices, unsafe_cast(values, arr), "set")
        assign(arr, _reshape(new, shape), what)
        return None
    ax = normalize_axis("put_along_axis", axis, arr.ndim)
    if indices.ndim != arr.ndim:
        raise ValueError(
            f"{arr._trace.fun_name}: {what} (at {user_frame_summary()}): `indices` and `arr` "
            f"must have the same number of dimensions, as NumPy says; got shapes "
            f"{tuple(indices.shape)} and {shape}. Add size-1 axes to indices "
            "(np.expand_dims)")
    # NumPy's fancy index: indices along ``axis``, an arange broadcast along each other.
    index = tuple(indices if d == ax else
                  np.arange(n).reshape((1,) * d + (n,) + (1,) * (arr.ndim - d - 1))
                  for d, n in enumerate(shape))
    assign(arr, _scatter(arr, index, unsafe_cast(values, arr), "set"), what)
    return None


# -- ufunc.at ----------------------------------------------------------------------------------

#: ``np.<ufunc>.at`` and the ``x.at[idx]`` update doing it (subtract adds the negation).
_AT_MODES = {"add": "add", "subtract": "add", "multiply": "mul", "minimum": "min",
             "maximum": "max"}


def ufunc_at(ufunc: Any, a, indices, b=None) -> None:
    """``np.add.at(a, indices, b)`` and the like on a traced ``a``: unbuffered,
    so repeated indices accumulate."""
    name = ufunc.__name__
    what = f"numpy.{name}.at(a, indices, b)"
    if type(a) is not Tracer:
        raise _numpy_target_error(a, what)
    mode = _AT_MODES.get(name)
    if mode is None or b is None:
        raise InPlaceUpdateError(
            f"{what} (at {user_frame_summary()}) is not supported on traced arrays: only "
            f"{', '.join(f'numpy.{n}.at' for n in _AT_MODES)} are. Write "
            f"a = a.at[indices].set(numpy.{name}(a[indices], b)) when the indices do not "
            "repeat")
    b = asarray(b)
    if name == "subtract":
        b = -b
    new = _scatter(a, indices, unsafe_cast(b, a) if b.dtype != a.dtype else b, mode)
    new = cast_for_update(new, a, ufunc)
    assign(a, new, what)


# -- x[idx] = v -------------------------------------------------------------------------------


def setitem(x, idx, value) -> None:
    """``x[idx] = value`` on a traced ``x``: NumPy's assignment (values cast
    as NumPy casts them, the last write winning on repeated indices)."""
    if x.ndim == 0 and is_scalar(x):
        raise scalar_target_error(
            x, "x[idx] = v", f"NumPy says 'numpy.{x.dtype.name}' object does not support item "
            "assignment")
    if type(value) is Tracer:
        link_ = value._base
        if link_ and _is_item_of(link_, x, idx):
            return  # x[idx] += v wrote through the view x[idx] already
    value = unsafe_cast(value, x)
    if _is_traced_mask(idx, x) and value.size == 1:
        # x[mask] = scalar with a mask known only when the program runs: the
        # selected elements' number does not matter, so this is a select.
        value = fit("x[mask] = v", _reshape(value, ()), x)
        assign(x, bind(select_p, idx, value, x), "x[mask] = v")
        return
    parse_index("setitem", tuple(x.shape), idx)  # NumPy's index errors first
    assign(x, _scatter(x, idx, value, "set"), "x[idx] = v")


def _is_traced_mask(idx: Any, x: Tracer) -> bool:
    return type(idx) is Tracer and idx.dtype == np.bool_ and idx.shape == x.shape


def _is_item_of(link_: Link, x: Tracer, idx: Any) -> bool:
    """Whether the view of ``link_`` is ``x[idx]`` itself (a basic index)."""
    parent = x._base
    ops = link_.ops
    if not parent:
        if link_.root is not x or len(ops) != 1:
            return False
    elif link_.root is not parent.root or ops[:-1] != parent.ops:
        return False
    last = ops[-1]
    return last[0] is operator.getitem and _same_index(last[2][0], idx)


def _same_index(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


# -- the functions and methods whose results are views ------------------------------------


def view_getitem(x, idx):
    """``x[idx]``: a view of ``x`` for a basic index (ints, slices, None,
    ...), as in NumPy, except where NumPy returns a scalar (every axis taken
    by an int, no ``...``): a copy.  Advanced indices give copies."""
    out = getitem(x, idx)
    if type(x) is not Tracer:
        return out
    kind = "basic" if type(idx) is slice or type(idx) is int else _index_kind(idx)
    if kind is None:
        return out
    if out.ndim == 0 and not _has_ellipsis(idx):
        return _new_scalar(out) if out is x else out  # NumPy's scalar: a copy
    if x.ndim == 0 and is_scalar(x):
        # s[...], s[None] of a scalar: a new array, sharing nothing with s
        return mark_array(out.copy() if out is x else out)
    refusal = None if kind == "basic" else (
        "it was made with a traced integer index (a view in NumPy, whose place is known "
        "only when the program runs). Write x = x.at[i].set(v) (or .add(v) ...) on the "
        "array itself instead")
    link(out, x, (operator.getitem, getitem, (idx,), {}, None), refusal=refusal)
    return out


def _index_kind(idx: Any) -> str | None:
    """"basic" for NumPy's basic index, "traced" for one with traced integer
    scalars (basic in NumPy), None for an advanced index (a copy)."""
    kind = "basic"
    for e in idx if type(idx) is tuple else (idx,):
        if e is None or e is Ellipsis or type(e) is slice:
            continue
        if isinstance(e, (bool, np.bool_)):
            return None
        if isinstance(e, (int, np.integer)):
            continue
        if type(e) is Tracer and e.ndim == 0 and e.dtype.kind in "iu":
            kind = "traced"
            continue
        return None
    return kind


def _has_ellipsis(idx: Any) -> bool:
    return any(e is Ellipsis for e in (idx if type(idx) is tuple else (idx,)))


_READ_ONLY = "NumPy makes this view read-only (assignment destination is read-only). Write " \
    "into a copy (.copy()), or update the array it was made from"


_COMPLEX_PART = ("writes through .real/.imag of a complex traced array are not supported. "
                 "Write x = new_real + 1j * x.imag (or x.real + 1j * new_imag) instead")


def _real_part(a) -> str | None:
    """The refusal of writes through ``.real``: none on a real array, whose
    ``.real`` is a writable view of it, as in NumPy."""
    return _COMPLEX_PART if a.dtype.kind == "c" else None


def _imag_part(a) -> str | None:
    """The refusal of writes through ``.imag``: a real array's is NumPy's
    read-only array of zeros."""
    return _COMPLEX_PART if a.dtype.kind == "c" else _READ_ONLY


def viewing(fn: Callable, np_fn: Callable, *, refusal: str | Callable | None = None,
            layout: bool = False, single: bool = False, rank: int | None = None) -> Callable:
    """``fn`` (a ``functrans.numpy`` function whose result NumPy makes a view
    of its first argument, or a list of views) recording the view.
    ``single``: only a call with one argument makes a view of it; ``rank``:
    only an argument of that many axes does (``np.diag`` of a matrix)."""
    @functools.wraps(fn)
    def view_fn(a, *args, **kwargs):
        call, np_call = fn, np_fn
        if layout and type(a) is Tracer and (
                "order" in kwargs or len(args) > len(_POSITIONAL[fn.__name__])):
            # reshape, ravel given an order: read the way NumPy reads it,
            # where NumPy's answer depends on the memory layout too
            args, kwargs = _order_keyword(fn, a, args, kwargs)
            call, np_call, order = in_memory_order(fn, np_fn, a, kwargs["order"])
            kwargs["order"] = order
        out = call(a, *args, **kwargs)
        if type(a) is Tracer and (rank is None or a.ndim == rank):
            if kwargs.get("copy"):  # np.reshape(..., copy=True): a copy, never a view
                return out.copy() if out is a else out
            if out is a and layout and a._base:
                # fn returned its argument (ravel of a 1-d array): NumPy copies
                # where the view's layout does not allow a view.
                op = (np_call, call, args, kwargs, None)
                decision = _Decision(a._base.root, a._base.ops + (op,))
                if decision.ambiguous is None:
                    return a if decision.view else a.copy()
                out = a.copy(order=None)  # followed as a view, marked ambiguous
                link(out, a, op, refusal=refusal(a) if callable(refusal) else refusal,
                     layout=True)
                return out
            if single and args:  # np.atleast_1d(a, b): a list of views of several arrays
                return out
            if a.ndim == 0 and type(out) is Tracer:
                made = _of_zero_d(out, a, np_fn, args, kwargs)
                if made is not None:
                    return made
            why = refusal(a) if callable(refusal) else refusal
            if type(out) is Tracer:
                link(out, a, (np_call, call, args, kwargs, None), refusal=why, layout=layout)
                if layout and kwargs.get("order") == "F" and out._base is None:
                    # NumPy's copy is laid out in the order it was read in
                    out = _memory_order.copy(out, "F")
            elif type(out) in (list, tuple):
                for i, o in enumerate(out):
                    link(o, a, (np_fn, fn, args, kwargs, i), refusal=why, layout=layout)
        return out

    return view_fn


def _order_keyword(fn: Callable, a: Tracer, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments of ``fn`` (``reshape`` or ``ravel``) with ``order``, read as
    NumPy reads it ('C', 'F', 'A' or 'K'), as a keyword: how NumPy's function is
    replayed on shadows and ``_Decision`` tells a C-order read."""
    bound = _signature(fn).bind(a, *args, **kwargs)
    named = dict(bound.arguments)
    named.pop(next(iter(named)))  # the array
    order = memory_order_arg(fn.__name__, named.pop("order", "C"))
    positional = tuple(named.pop(p) for p in _POSITIONAL[fn.__name__] if p in named)
    return positional, {**named, "order": order}


#: The arguments of ``reshape`` and ``ravel`` passed by position, after the array.
_POSITIONAL = {"reshape": ("shape",), "ravel": ()}


@functools.cache
def _signature(fn: Callable) -> inspect.Signature:
    return inspect.signature(fn)


def in_memory_order(fn: Callable, np_fn: Callable, a: Tracer,
                    order: str) -> tuple[Callable, Callable, str]:
    """``fn`` (``reshape`` or ``ravel``) and NumPy's ``np_fn`` reading the
    elements of the traced ``a`` in ``order`` as NumPy reads them, with the
    order to pass them: 'A' is 'F' for an array laid out in Fortran order
    only, else 'C' (NumPy's own rule), and ``ravel``'s 'K' takes the axes in
    the order of their strides in memory, both decided on ``a``'s shadow,
    laid out as NumPy lays ``a`` out.  What is passed on reads the same
    elements whatever the layout, so a shadow in C order gives the view's
    positions in its root.  Where the layout is not known, the result
    cannot be known either: an error naming the line and the fix."""
    if order in ("C", "F") or (order == "K" and fn.__name__ != "ravel"):
        return fn, np_fn, order  # reshape's order 'K' is NumPy's error, which fn raises
    shadow = _numpy_shadow(a)
    if shadow is None:
        raise MemoryLayoutError(
            f"{a._trace.fun_name}: {fn.__name__}(..., order={order!r}) (at "
            f"{user_frame_summary()}) reads the {a.aval.str_short()} array in the order NumPy "
            "lays it out in memory, which functrans does not know here (a ufunc's result "
            "keeps its operands' memory order, other functions have rules of their own, and "
            "an argument sliced with a step has gaps). Give order='C' or order='F', or "
            ".copy() the array first (C order)")
    if order == "A" or shadow.ndim <= 1:
        fortran = shadow.flags.f_contiguous and not shadow.flags.c_contiguous
        return fn, np_fn, "F" if fortran else "C"
    wanted = np.ravel(shadow, "K")
    axes = tuple(sorted(range(shadow.ndim), key=lambda d: -abs(shadow.strides[d])))
    if np.array_equal(shadow.transpose(axes).ravel(), wanted):
        return functools.partial(_ravel_axes, axes), functools.partial(_np_ravel_axes, axes), "K"
    # A broadcast axis (of stride 0) NumPy may take in another order, where
    # it copies: the elements at the places NumPy reads, by their positions in ``a``.
    places = np.empty(int(shadow.max(initial=-1)) + 1, np.intp)
    places[shadow.ravel()] = np.arange(shadow.size)
    return functools.partial(_ravel_places, places[wanted]), np_fn, "K"


def _ravel_axes(axes: tuple[int, ...], a, order="K"):
    return _reshape(_transpose(a, axes), (a.size,))


def _np_ravel_axes(axes: tuple[int, ...], a, order="K"):
    return np.ravel(np.transpose(a, axes))


def _ravel_places(places: np.ndarray, a, order="K"):
    return getitem(_reshape(a, (a.size,)), places)


def _numpy_shadow(t: Tracer) -> np.ndarray | None:
    """NumPy's picture of ``t`` in memory: an ``arange`` of its root's shape
    laid out as NumPy lays out the root, with ``t``'s view operations
    replayed by NumPy (so its strides are NumPy's); None where the root's
    layout is not known."""
    link_ = t._base
    root, ops = (link_.root, link_.ops) if link_ else (t, ())
    order = _memory_order.root_order(root)
    if order is None:
        return None
    return np.asarray(_replay(_memory_order.shadow(tuple(root.shape), order), ops, numpy=True))


def _of_zero_d(out: Tracer, a: Tracer, np_fn: Callable, args: tuple,
               kwargs: dict) -> Tracer | None:
    """``out``, made from the 0-d ``a`` by a function of ``VIEW_FUNCTIONS``, if
    it is no view of ``a`` in NumPy: NumPy makes no view of a scalar (its
    result is a new array, or a scalar), and some of these functions give a
    scalar for a 0-d array too (``np.flip``); else None (a view, or
    NumPy's read-only array, recorded as a view that refuses writes).
    NumPy's function is run on a 0-d array or a scalar of ``a``'s dtype to
    tell."""
    scalar = is_scalar(a)
    probe = np.zeros((), a.dtype)
    result = np_fn(probe[()] if scalar else probe, *args, **kwargs)
    gives_array = isinstance(result, np.ndarray)
    if gives_array and (not scalar or not result.flags.writeable):
        return None  # a view, or a read-only array (broadcast_to): writes refused as NumPy's
    if not gives_array:
        return _new_scalar(out) if out is a else out
    return mark_array(out.copy() if out is a else out)


#: A new tracer of a value, with nothing marked (``Tracer.copy`` as the core
#: defines it; ``x.copy()`` of a 0-d array is marked a 0-d array).
_new_scalar = _memory_order._new_tracer


def whole_view(x: Any, dtype: Any = None, type: Any = None) -> Any:
    """``x.view()``: an array sharing all of ``x``'s elements (an update
    through either is seen by the other); ``x.view(dtype)`` of another dtype
    reads ``x``'s bits as ``dtype`` (``_bitcast_view``).  A value NumPy
    holds as a scalar gives a copy, as NumPy's scalar ``view`` does."""
    if isinstance(dtype, builtins.type) and not isinstance(dtype, np.dtype) and \
            issubclass(dtype, (np.ndarray, Tracer)):
        dtype, type = None, dtype  # x.view(np.ndarray): NumPy reads a type as type=
    what = "x.view(" + ", ".join(f"{k}={getattr(v, '__name__', v)}" for k, v in
                                 (("dtype", dtype), ("type", type)) if v is not None) + ")"
    if type is not None and not (isinstance(type, builtins.type)
                                 and issubclass(type, (np.ndarray, Tracer))):
        raise TypeError(f"{x._trace.fun_name}: {what}: type must be an ndarray type (as NumPy "
                        "says); leave it out for a view of the array")
    if dtype is not None and np.dtype(dtype) != x.dtype:
        return _bitcast_view(x, np.dtype(dtype), what)
    if x.ndim == 0 and is_scalar(x):
        return _new_scalar(x)
    out = _new_scalar(x)
    if x.ndim == 0:
        mark_array(out)
    link(out, x, (np.ndarray.view, _new_scalar, (), {}, None))
    return out


# -- x.view(dtype): the bits read as another dtype -------------------------------------------


def _bitcast(x: Any, old: np.dtype, new: np.dtype) -> Any:
    """``x``'s bits read as ``new``, NumPy's way: the last axis scaled by the
    ratio of the itemsizes (``bitcast_convert_type`` adds or consumes a
    trailing axis of parts instead)."""
    if old.itemsize > new.itemsize:
        out = bind(bitcast_convert_type_p, x, new_dtype=new)
        return _reshape(out, tuple(x.shape[:-1]) + (x.shape[-1] * (old.itemsize // new.itemsize),))
    if old.itemsize < new.itemsize:
        parts = new.itemsize // old.itemsize
        x = _reshape(x, tuple(x.shape[:-1]) + (x.shape[-1] // parts, parts))
    return bind(bitcast_convert_type_p, x, new_dtype=new)


#: Dtypes standing for the bytes of an element on shadows (by size); a
#: numeric one where there is one, so that the view functions that follow
#: (``.real`` ...) replay on it.
_SHADOW_DTYPES = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64, 16: np.complex128}


def _bitcast_shadow(shadow: np.ndarray, old: np.dtype, new: np.dtype) -> np.ndarray:
    """NumPy's ``view`` of a shadow (whose elements stand for ``old`` ones,
    whatever their own size) as elements standing for ``new`` ones: a view
    with the shape and the memory layout (strides in units of elements)
    that NumPy's ``view(new)`` gives the array itself, raising NumPy's
    ValueError where that is refused."""
    size = shadow.itemsize * new.itemsize / old.itemsize
    if size != int(size):
        raise _ShadowTooNarrow
    if size == shadow.itemsize:
        return shadow.view()  # (a 0-d array has no bytes axis to go through)
    as_bytes = shadow if shadow.itemsize == 1 else shadow.view(np.int8)
    return as_bytes.view(_SHADOW_DTYPES.get(int(size), f"V{int(size)}"))


class _ShadowTooNarrow(Exception):
    """A shadow's elements are too small to stand for the parts of a view."""


_BITCAST_WRITES = ("writes through a view with another dtype would reinterpret the written bits "
                   "as the array's own dtype, which is not followed. Update the array itself "
                   "(x[...] = new.view(x.dtype)), or write into a copy (.copy())")


def _bitcast_view(x: Tracer, new: np.dtype, what: str) -> Any:
    """``x.view(new)``: a view of ``x`` whose elements are ``x``'s bits read
    as ``new``.  An update of ``x`` is seen through it; a write through it is
    refused (``_BITCAST_WRITES``).  As NumPy, another itemsize scales the
    last axis, which must be contiguous in memory (and divisible), and a
    0-d array keeps its itemsize."""
    old = x.dtype
    name, line = x._trace.fun_name, user_frame_summary()
    if new.kind not in "biufc":
        raise TypeError(f"{name}: {what} (at {line}): {new} has no numeric bits to read "
                        f"{old} as; view a traced array as a bool, integer, float or complex "
                        "dtype")
    if old.itemsize != new.itemsize:
        if x.ndim == 0:
            raise ValueError(f"{name}: {what} (at {line}): changing the dtype of a 0d array is "
                             f"only supported if the itemsize is unchanged ({old} has "
                             f"{old.itemsize} bytes, {new} {new.itemsize}), as NumPy says; "
                             "view x.reshape(1) instead")
        if (x.shape[-1] * old.itemsize) % new.itemsize:
            raise ValueError(f"{name}: {what} (at {line}): when changing to a larger dtype, its "
                             "size must be a divisor of the total size in bytes of the last "
                             f"axis of the array (NumPy's rule): {x.shape[-1]} {old} elements "
                             f"are {x.shape[-1] * old.itemsize} bytes, not a multiple of "
                             f"{new.itemsize}")
    op: Op = (_bitcast_shadow, _bitcast, (old, new), {}, None)
    parent = x._base
    root, ops = (parent.root, parent.ops + (op,)) if parent else (x, (op,))
    order = _memory_order.root_order(root)
    if order is None and old.itemsize != new.itemsize:
        raise MemoryLayoutError(
            f"{name}: {what} (at {line}) reads the last axis of a traced {x.aval.str_short()} "
            f"array as {new}, which NumPy allows only where that axis is contiguous in memory, "
            "and the layout of this array is not known here; view a C-ordered copy instead: "
            "x.copy().view(...)")
    # Replayed on the shadow: NumPy's contiguity check, and the shadow the
    # view's later views replay on (a same-itemsize view's layout is x's).
    shadow = _memory_order.shadow(tuple(root.shape), order or tuple(range(root.ndim)))
    try:
        _replay(shadow, ops, numpy=True)
    except _ShadowTooNarrow:
        raise TypeError(f"{name}: {what} (at {line}): a view of a traced {root.dtype} array as "
                        f"{new}, {new.itemsize} byte(s) per element, is not supported; view a "
                        "new array of its parts instead, e.g. np.stack([x.real, x.imag], "
                        "-1).view(...) (a copy)") from None
    except ValueError as e:  # NumPy's own refusal on the shadow: the last axis is strided
        raise ValueError(f"{name}: {what} (at {line}): {e} (NumPy's rule: x's last axis is "
                         "not contiguous in memory here); view a C-ordered copy instead: "
                         "x.copy().view(...)") from None
    out = _bitcast(x, old, new)
    if x.ndim == 0 and is_scalar(x):
        return out  # a NumPy scalar's view is a new scalar
    link(out, x, op, refusal=_BITCAST_WRITES)
    return out


#: The ``functrans.numpy`` functions whose results are views in NumPy, with
#: NumPy's function and what ``viewing`` needs to know.
VIEW_FUNCTIONS: dict[str, tuple[Callable, dict]] = {
    "reshape": (np.reshape, {"layout": True}),
    "ravel": (np.ravel, {"layout": True}),
    "transpose": (np.transpose, {}),
    "permute_dims": (np.permute_dims, {}),
    "matrix_transpose": (np.matrix_transpose, {}),
    "moveaxis": (np.moveaxis, {}),
    "rollaxis": (np.rollaxis, {}),
    "swapaxes": (np.swapaxes, {}),
    "squeeze": (np.squeeze, {}),
    "expand_dims": (np.expand_dims, {}),
    "flip": (np.flip, {}),
    "fliplr": (np.fliplr, {}),
    "flipud": (np.flipud, {}),
    "split": (np.split, {}),
    "array_split": (np.array_split, {}),
    "hsplit": (np.hsplit, {}),
    "vsplit": (np.vsplit, {}),
    "dsplit": (np.dsplit, {}),
    "unstack": (np.unstack, {}),
    "atleast_1d": (np.atleast_1d, {"single": True}),
    "atleast_2d": (np.atleast_2d, {"single": True}),
    "atleast_3d": (np.atleast_3d, {"single": True}),
    "rot90": (np.rot90, {}),
    "broadcast_to": (np.broadcast_to, {"refusal": _READ_ONLY}),
    "diagonal": (np.diagonal, {"refusal": _READ_ONLY}),
    "diag": (np.diag, {"refusal": _READ_ONLY, "rank": 2}),
    "real": (np.real, {"refusal": _real_part}),
    "imag": (np.imag, {"refusal": _imag_part}),
}


_BROADCAST_VIEW = "NumPy writes through a broadcast array into the element each of its " \
    "repeated positions shares, and warns that it will refuse to. Write into a copy " \
    "(.copy()), or update the array it was made from"


def broadcast_arrays(fn: Callable) -> Callable:
    """``fn`` (``functrans.numpy.broadcast_arrays``) giving NumPy's results:
    each argument itself where it has the broadcast shape (a 0-d array made
    of a scalar), else a view of it (writes through it refused)."""
    @functools.wraps(fn)
    def arrays_fn(*args, **kwargs):
        outs = list(fn(*args, **kwargs))
        for i, (a, out) in enumerate(zip(args, outs)):
            if type(a) is not Tracer:
                continue
            if out is a:
                if a.ndim == 0 and is_scalar(a):
                    outs[i] = mark_array(a.copy())
                continue
            shape = tuple(out.shape)
            link(out, a, (np.broadcast_to, _broadcast_to, (shape,), {}, None),
                 refusal=_BROADCAST_VIEW)
        return tuple(outs)

    return arrays_fn


#: The same for ``functrans.numpy.linalg``.
LINALG_VIEW_FUNCTIONS: dict[str, tuple[Callable, dict]] = {
    "matrix_transpose": (np.linalg.matrix_transpose, {}),
    "diagonal": (np.linalg.diagonal, {"refusal": _READ_ONLY}),
}


def copying(fn: Callable) -> Callable:
    """``fn`` (a ``functrans.numpy`` function whose result is a new array in
    NumPy) returning a new tracer where ``fn`` hands back its argument
    itself (``concatenate([x])``, ``roll(x, 0)``): an in-place update of
    the result must leave the argument alone."""
    @functools.wraps(fn)
    def copy_fn(*args, **kwargs):
        out = fn(*args, **kwargs)
        if type(out) is Tracer and args and kwargs.get("copy", True):
            first = args[0]
            if out is first or (type(first) in (list, tuple) and any(out is a for a in first)):
                if out.ndim == 0:  # a scalar, unless ARRAY_FUNCTIONS says otherwise
                    return _new_scalar(out)
                return out.copy(order=None)  # NumPy's order for these is not followed
        return out

    return copy_fn


#: The ``functrans.numpy`` functions that may return their argument itself
#: where NumPy returns a new array.
COPY_FUNCTIONS = ["concatenate", "concat", "hstack", "vstack", "dstack", "column_stack",
                  "stack", "tile", "repeat", "roll", "nan_to_num"]


def zero_d_array(fn: Callable) -> Callable:
    """``fn`` (a ``functrans.numpy`` function whose result NumPy makes an
    array even where it has no axes: ``where``, ``roll`` ...)
    marking a 0-d result as a 0-d array, which in-place updates change, not
    a scalar."""
    @functools.wraps(fn)
    def array_fn(*args, **kwargs):
        out = fn(*args, **kwargs)
        if type(out) is Tracer and out.ndim == 0:
            if any(out is a for a in args):
                out = out.copy()
            mark_array(out)
        return out

    return array_fn


#: The ``functrans.numpy`` functions whose 0-d results are arrays in NumPy.
ARRAY_FUNCTIONS = ["where", "select", "tensordot", "roll", "tile", "cov", "piecewise", "isin"]
