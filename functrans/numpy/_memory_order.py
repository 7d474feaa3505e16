"""The memory order NumPy would give an array of a traced program.

Whether NumPy's ``reshape`` and ``ravel`` make a view or a copy depends on
the memory layout of the array, and NumPy's results follow their operands'
layout: a ufunc, ``np.where``, ``astype`` or ``np.copy`` allocates its
result in the order of its operands' strides (``order='K'``), so
``np.swapaxes(x, 0, -1) * 1.0`` is Fortran-ordered and its ``reshape(-1)``
a copy.  ``functrans.numpy._inplace`` asks here, only when such a decision
is made for an array that is no view (a root), what NumPy's layout of that
array would be.

The answer is found by walking back the equations that made the root's
variable, each by the rule of its primitive (``RULES``, the one table), on
"proxies": small NumPy arrays (every axis of two or more elements cut to
two) laid out as NumPy would lay out the traced array.  Elementwise
primitives ask NumPy's own iterator, with its order-keeping allocation, for
the layout of their result from their operands' proxies, so NumPy's rule
(the first operand's order wins among equal ones, broadcast operands
count by their strides) is NumPy's own.  A primitive with no verified rule
gives "unknown" (None) unless its result has at most one axis of two or
more elements (then every layout is contiguous).  A primitive of several
results answers for each (``sort``: its values in the operand's order, its
indices in C order).

Inputs of the traced function have their array's layout where the trace
has the array (eager transforms); an array dense in no order (a strided
slice) is "unknown".  Where the trace sees only avals (``jit``), an input is
taken to be C-contiguous and the trace records it (``c_assumed``), and
``jit`` retraces a call whose array is laid out otherwise.  Arrays that are
results of enclosing traces follow their own trace.  Constants have the
layout of their NumPy value.

In-place updates keep an array's memory: a variable an update rebound a
root to has that root's layout (``note_update``), and where one variable may stand for two
arrays of different layouts the walk says "unknown"; a copy made by
``x.copy(order)`` in another layout than ``x``'s gets a variable of its
own (``copy``); so does an array made where NumPy's layout is decided by
a rule of the function (``laid_out``: ``np.ones_like`` follows its
prototype, ``np.select`` fills a C-ordered array).  Such rules ask NumPy
itself, on a ``model`` of the traced array: an unwritten NumPy array of
its shape and strides (a view's operations replayed on its root's).  The
bookkeeping lives per trace.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from functrans.core import Member, Tracer, bind, install_tracer_layout, memory_layout
from functrans.core.ir import Literal
from functrans.primitives.broadcasting import (
    broadcast_in_dim_p,
    convert_element_type_p,
    reshape_p,
    transpose_p,
)
from functrans.primitives.elementwise import binary, integer_pow_p, select_p, unary
from functrans.primitives.indexing import dynamic_update_slice_p, scatter_p
from functrans.primitives.reductions import (
    argmax_p,
    argmin_p,
    cummax_p,
    cumprod_p,
    cumsum_p,
    reduce_and_p,
    reduce_max_p,
    reduce_min_p,
    reduce_or_p,
    reduce_prod_p,
    reduce_sum_p,
)
from functrans.primitives.shape import expand_dims_p, iota_p, rev_p, slice_p, squeeze_p
from functrans.primitives.sort import sort_p

#: ``Tracer.copy`` as the core defines it (``functrans.numpy`` installs ``copy``
#: in its place): a new tracer of the same variable.
_new_tracer = Tracer.copy

#: A layout: a proxy array, or None where NumPy's layout is not known.
Proxy = np.ndarray | None


def _clipped(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(min(d, 2) for d in shape)


def c_proxy(shape: tuple[int, ...]) -> np.ndarray:
    return np.empty(_clipped(shape), np.bool_)


def proxy_of(value: np.ndarray) -> np.ndarray:
    """The proxy of a NumPy array: dense, in the order NumPy's ``order='K'``
    copy of it has."""
    value = value[tuple(slice(0, 2) for _ in value.shape)]
    return np.empty_like(value, dtype=np.bool_)


def significant(shape: tuple[int, ...]) -> int:
    return sum(d > 1 for d in shape)


def _same(p: Proxy, q: Proxy) -> bool:
    return p is not None and q is not None and p.shape == q.shape and p.strides == q.strides


# -- the rules: a primitive's result proxy from its operands' proxies ----------------------


def _keep_order(eqn, ins: list[Proxy]) -> Proxy:
    """NumPy's ufuncs, ``np.where``, ``astype``: the result is allocated in
    its operands' order (``order='K'``), as NumPy's iterator decides it."""
    if any(p is None for p in ins):
        return None
    arrays = [p for p in ins if p is not None and p.ndim]
    if len(arrays) == 1 and arrays[0].flags.c_contiguous and arrays[0].ndim == len(
            eqn.outputs[0].aval.shape):
        return arrays[0]  # one C-ordered operand (and scalars): a C-ordered result
    operands: list[Any] = [*ins, None]
    flags: Any = [["readonly"]] * len(ins) + [["writeonly", "allocate"]]
    it = np.nditer(operands, flags=["zerosize_ok", "refs_ok"], op_flags=flags, order="K")
    return it.operands[-1]


def _transpose(eqn, ins: list[Proxy]) -> Proxy:
    p = ins[0]
    return None if p is None else p.transpose(eqn.params["permutation"])


def _broadcast(eqn, ins: list[Proxy]) -> Proxy:
    """A broadcast operand: stride 0 along its new axes, as ``np.broadcast_to``."""
    p = ins[0]
    if p is None:
        return None
    shape = eqn.params["shape"]
    dims = eqn.params["broadcast_dimensions"]
    expanded = np.expand_dims(p, tuple(i for i in range(len(shape)) if i not in dims))
    return np.broadcast_to(expanded, _clipped(shape))


def _like_operand(eqn, ins: list[Proxy]) -> Proxy:
    """Slices and reversals keep the order of the strides (a step below an
    axis' length cannot pass the next axis' stride); scatters write into a
    copy of their operand."""
    p = ins[0]
    if p is None:
        return None
    shape = _clipped(eqn.outputs[0].aval.shape)
    if eqn.primitive is squeeze_p:
        return np.squeeze(p, eqn.params["dimensions"])
    if eqn.primitive is expand_dims_p:
        return np.expand_dims(p, eqn.params["dimensions"])
    return p[tuple(slice(0, n) for n in shape)]


def _reshape(eqn, ins: list[Proxy]) -> Proxy:
    """A C-contiguous operand reshapes into a C-contiguous result (a view or
    a copy); another's is known only by NumPy's decision on the full array."""
    p = ins[0]
    if p is None or not p.flags.c_contiguous:
        return None
    return c_proxy(eqn.outputs[0].aval.shape)


def _c_order(eqn, ins: list[Proxy]) -> Proxy:
    return c_proxy(eqn.outputs[0].aval.shape)


def _reduced(eqn, ins: list[Proxy]) -> Proxy:
    """NumPy's ufunc reductions (``np.sum``, ``np.max``, ``np.all`` ...)
    allocate their result in the order of the operand's axes they keep
    (``order='K'``)."""
    p = ins[0]
    if p is None:
        return None
    # A reduction of the proxy itself: it allocates as NumPy's do, and an
    # axis of length 0 (which no index can stand for) is reduced too.
    return np.empty_like(np.logical_or.reduce(p, axis=tuple(eqn.params["axes"])), p.dtype)


def _sort(eqn, ins: list[Proxy]) -> tuple[Proxy, Proxy]:
    """``np.sort`` sorts a copy of its operand made in the operand's order
    (``order='K'``); ``np.argsort``'s indices are a new C-ordered array."""
    p = ins[0]
    return None if p is None else np.empty_like(p), c_proxy(eqn.outputs[1].aval.shape)


#: The rule of each primitive whose layout is known (checked against NumPy in
#: tests/numpy/test_inplace_layout.py); a primitive of several results gives
#: one proxy per result.  Others give None.
RULES: dict[Any, Callable[[Any, list[Proxy]], Any]] = {
    **{p: _keep_order for p in (*unary.values(), *binary.values())},
    integer_pow_p: _keep_order,
    select_p: _keep_order,
    convert_element_type_p: _keep_order,
    transpose_p: _transpose,
    broadcast_in_dim_p: _broadcast,
    slice_p: _like_operand,
    rev_p: _like_operand,
    squeeze_p: _like_operand,
    expand_dims_p: _like_operand,
    scatter_p: _like_operand,
    dynamic_update_slice_p: _like_operand,
    reshape_p: _reshape,
    iota_p: _c_order,
    # np.cumsum, np.cumprod and np.maximum.accumulate along an axis allocate
    # in their operand's order.
    cumsum_p: _like_operand,
    cumprod_p: _like_operand,
    cummax_p: _like_operand,
    sort_p: _sort,
    **{p: _reduced for p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p,
                             reduce_and_p, reduce_or_p)},
    # np.argmax and np.argmin along an axis give a new C-ordered array.
    argmax_p: _c_order,
    argmin_p: _c_order,
}


# -- the per-trace bookkeeping ------------------------------------------------------------


class ByIdentity:
    """A map from tracers, by identity (a tracer's ``==`` is elementwise, so
    weak dictionaries cannot hold them), that forgets a tracer with it."""

    __slots__ = ("_items",)

    def __init__(self):
        self._items: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, t: Any, default: Any = None) -> Any:
        item = self._items.get(id(t))
        return item[1] if item is not None and item[0]() is t else default

    def __contains__(self, t: Any) -> bool:
        item = self._items.get(id(t))
        return item is not None and item[0]() is t

    def __setitem__(self, t: Any, value: Any) -> None:
        key = id(t)
        items = self._items

        def forget(_: weakref.ref) -> None:
            items.pop(key, None)

        items[key] = (weakref.ref(t, forget), value)

    def setdefault(self, t: Any, value: Any) -> Any:
        if t not in self:
            self[t] = value
        return self.get(t)


class _Orders:
    """One trace's layouts: memoised by variable, the equation making each
    variable, the roots that in-place updates rebound variables to, and the
    layouts of copies."""

    __slots__ = ("memo", "producers", "upto", "updated", "origins", "fixed", "conflicted",
                 "gapped", "vars", "__weakref__")

    def __init__(self):
        self.memo: dict[int, Proxy] = {}
        self.producers: dict[int, Any] = {}
        self.upto = 0
        #: id(var) -> (root, whether the var may be another array's too)
        self.updated: dict[int, tuple[Tracer, bool]] = {}
        #: root -> its variable before its first in-place update
        self.origins = ByIdentity()
        #: id(var) -> the layout of the copy it was made for (``copy``)
        self.fixed: dict[int, Proxy] = {}
        #: ids of variables standing for arrays of more layouts than followed
        self.conflicted: set[int] = set()
        #: ids of the inputs whose arrays have gaps (``_laid_out``)
        self.gapped: set[int] = set()
        self.vars: dict[int, Any] = {}  # keeps the ids of memo, updated and gapped valid


_ORDERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _orders(trace) -> _Orders:
    state = _ORDERS.get(trace)
    if state is None:
        state = _ORDERS[trace] = _Orders()
    return state


def note_update(root: Tracer, new_var: Any, shared: bool) -> None:
    """``root`` (an array that is no view) is rebound to ``new_var`` by an
    in-place update: NumPy keeps its memory, so the variable has its layout.
    ``shared``: the variable may stand for another array too (``copyto(a,
    b)`` rebinds ``a`` to ``b``'s value)."""
    state = _orders(root._trace)
    state.origins.setdefault(root, root._var)
    if id(new_var) in state.updated and state.updated[id(new_var)][0] is not root:
        state.conflicted.add(id(new_var))
    state.updated[id(new_var)] = (root, shared)
    state.vars[id(new_var)] = new_var
    state.memo.pop(id(new_var), None)


def copy(x: Tracer, order: str | None) -> Tracer:
    """A new tracer of ``x``'s value laid out in ``order`` ('C', 'F', 'K' or
    'A' as NumPy's ``copy``; None: an order not known; another string:
    NumPy's error).  It shares ``x``'s
    variable where the layouts agree (no equation); otherwise it gets a
    variable of its own (an identity ``reshape``), whose layout is the
    copy's: later operations on either array then follow their own."""
    if order not in ("C", "F", "A", "K", None):
        raise ValueError(f"{x._trace.fun_name}: order must be one of 'C', 'F', 'A', or 'K' "
                         f"(got {order!r}), as NumPy says; give one of those")
    shape = tuple(x.shape)
    if order == "K" or significant(shape) <= 1:
        return _new_tracer(x)
    if order == "A":  # Fortran order if x is Fortran-contiguous, else C
        m = model(x)
        order = None if m is None else "F" if m.flags.f_contiguous else "C"
    want = None
    if order == "C":
        want = c_proxy(shape)
    elif order == "F":
        want = np.asfortranarray(c_proxy(shape))
    return laid_out(x, want)


def laid_out(x: Tracer, want: Proxy) -> Tracer:
    """A new tracer of ``x``'s value in an array laid out as the proxy
    ``want`` (None: a layout not known), sharing ``x``'s variable where
    that is its layout already."""
    if significant(tuple(x.shape)) <= 1 or (want is not None and _same(view_proxy(x), want)):
        return _new_tracer(x)
    out = bind(reshape_p, x, new_sizes=tuple(x.shape))
    out._base = False  # a copy: never taken for the input it copies
    state = _orders(out._trace)
    state.fixed[id(out._var)] = want
    state.vars[id(out._var)] = out._var
    return out


def laid_out_like(x: Tracer, prototype: Any) -> Tracer:
    """``laid_out``: ``x``'s value in an array laid out as NumPy's
    ``np.empty_like(prototype)`` (``order='K'``)."""
    m = model(prototype) if type(prototype) is Tracer else np.asarray(prototype)
    return laid_out(x, None if m is None else proxy_of(np.empty_like(m, np.bool_)))


def model(t: Tracer) -> np.ndarray | None:
    """A NumPy array of ``t``'s shape whose strides are (up to the item size)
    those NumPy's array would have, for asking NumPy what it does with that
    layout (``np.ones_like(t)``, ``order='A'``); None where that is not
    known.  A view's operations are replayed on its root's model, whole (a
    proxy, cut to two elements an axis, lacks the gaps a slice leaves), so
    steps, reversals, broadcasts and the parts of complex numbers count as in
    NumPy.  Its memory is never written (``np.empty``), so a large one costs
    only address space."""
    link = t._base
    root = link.root if link else t
    order = root_order(root)
    if order is None:
        return None
    shape = tuple(root.shape)
    # The root's dtype: a view of .real of a complex array has gaps, as in NumPy.
    out = np.empty([shape[a] for a in order], root.dtype).transpose(np.argsort(order))
    for np_fn, _, args, kwargs, item in link.ops if link else ():
        if _holds_tracer(args) or _holds_tracer(kwargs):
            return None  # a view at a traced index: NumPy's function needs a number
        out = np_fn(out, *args, **kwargs)
        out = out if item is None else out[item]
    return out if isinstance(out, np.ndarray) else None


def _holds_tracer(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (tuple, list)):
        return any(_holds_tracer(e) for e in x)
    if isinstance(x, dict):
        return any(_holds_tracer(e) for e in x.values())
    return False


def root_order(root: Tracer) -> tuple[int, ...] | None:
    """The axes of ``root`` from the slowest varying in memory to the
    fastest, as NumPy lays the array out; None where that is not known."""
    shape = tuple(root.shape)
    if significant(shape) <= 1:
        return tuple(range(len(shape)))
    p = _tracer_proxy(root)
    if p is None or any(s == 0 for s, d in zip(p.strides, p.shape) if d > 1):
        return None
    if _has_gaps(root):
        return None  # an input with gaps: its reshape is NumPy's decision by its strides
    units = [a for a, d in enumerate(p.shape) if d <= 1]
    axes = sorted((a for a, d in enumerate(p.shape) if d > 1), key=lambda a: -abs(p.strides[a]))
    strides = [abs(p.strides[a]) for a in axes]
    if len(set(strides)) != len(strides):
        return None
    return tuple(units + axes)


def _has_gaps(t: Tracer) -> bool:
    """Whether ``t``, an array that is no view, is an input with gaps
    (``_laid_out``), of its trace or, through inputs standing for arrays of
    enclosing traces, of one of those."""
    while True:
        trace = t._trace
        state = _orders(trace)
        var = state.origins.get(t, t._var)
        if id(var) in state.gapped:
            return True
        enclosing = getattr(trace, "_outer", {}).get(id(var))
        if enclosing is None or enclosing._base:
            return False
        t = enclosing


def _traced_layout(t: Tracer) -> tuple[bool, tuple[int, ...]] | None | bool:
    """``core.tracer_layout``: the layout of a traced array (False: not known)."""
    if significant(tuple(t.shape)) <= 1:
        return None
    p = model(t) if t._base else _tracer_proxy(t)
    return False if p is None else memory_layout(p)


def _layout_of(x: np.ndarray | None) -> tuple[bool, tuple[int, ...]] | None:
    return _UNKNOWN if x is None else memory_layout(x)


def _give_layout(t: Tracer, layout: Any) -> None:
    """``core.give_layout``: ``t``'s variable, made by a primitive of no
    rule here (a loop), is laid out as ``layout`` says (False: not known)."""
    if t._base:
        return
    state = _orders(t._trace)
    var = t._var
    state.fixed[id(var)] = _laid_out(t._trace, var, tuple(t.shape),
                                     _UNKNOWN if layout is False else layout)
    state.vars[id(var)] = var
    state.memo.pop(id(var), None)


install_tracer_layout(_traced_layout, _give_layout)


def _tracer_proxy(t: Tracer) -> Proxy:
    """The layout of an array that is no view."""
    return _var_proxy(t._trace, _orders(t._trace).origins.get(t, t._var))


def view_proxy(t: Tracer) -> Proxy:
    """The layout of any traced array: a view's variable is made by the
    view's own equations (``transpose``, ``slice`` ...) from its root's."""
    if not t._base:
        return _tracer_proxy(t)
    return _var_proxy(t._trace, t._var)


def _var_proxy(trace, var: Any) -> Proxy:
    """The layout of ``var`` of ``trace``, walking back the equations (no
    recursion: programs are long)."""
    state = _orders(trace)
    memo = state.memo
    producers = state.producers
    for e in trace.eqns[state.upto:]:
        for v in e.outputs:
            producers[id(v)] = e
    state.upto = len(trace.eqns)
    outer = getattr(trace, "_outer", {})
    todo: list[tuple[Any, bool]] = [(var, False)]
    busy: set[int] = set()
    while todo:
        v, ready = todo.pop()
        key = id(v)
        if key in memo and not ready:
            continue
        if not ready:
            if key in busy:  # a cycle through updates: not known
                memo[key] = None
                continue
            busy.add(key)
            todo.append((v, True))
            todo.extend((d, False) for d in _dependencies(state, producers, v)
                        if id(d) not in memo)
            continue
        busy.discard(key)
        memo[key] = _proxy_from(state, producers, outer, trace, v)
        state.vars[key] = v
    return memo[id(var)]


def _dependencies(state: _Orders, producers: dict, v: Any) -> list:
    deps: list[Any] = []
    eqn = producers.get(id(v))
    if eqn is not None and eqn.primitive in RULES:
        deps.extend(x for x in eqn.inputs if type(x) is not Literal)
    updated = state.updated.get(id(v))
    if updated is not None:
        origin = state.origins.get(updated[0])
        if origin is not None and origin is not v:
            deps.append(origin)
    return deps


def _proxy_from(state: _Orders, producers: dict, outer: dict, trace: Any, v: Any) -> Proxy:
    """``v``'s layout, its dependencies' known."""
    key = id(v)
    if key in state.conflicted:
        return None
    if key in state.fixed:
        return state.fixed[key]
    own = _own_proxy(state, producers, outer, trace, v)
    updated = state.updated.get(key)
    if updated is None:
        return own
    root, shared = updated
    origin = state.origins.get(root)
    theirs = None if origin is None or origin is v else state.memo.get(id(origin))
    if not shared:
        return theirs
    return theirs if _same(own, theirs) else None


def _own_proxy(state: _Orders, producers: dict, outer: dict, trace: Any, v: Any) -> Proxy:
    shape = tuple(v.aval.shape)
    if significant(shape) <= 1:
        return c_proxy(shape)
    key = id(v)
    eqn = producers.get(key)
    if eqn is not None:
        rule = RULES.get(eqn.primitive)
        if rule is None:
            return None
        ins = [np.empty((), np.bool_) if type(x) is Literal else state.memo.get(id(x))
               for x in eqn.inputs]
        if eqn.primitive.multiple_results:
            return rule(eqn, ins)[next(i for i, o in enumerate(eqn.outputs) if o is v)]
        return rule(eqn, ins)
    enclosing = outer.get(key)
    if enclosing is not None:
        if enclosing._base:  # a view: laid out as NumPy makes it from its root
            return _laid_out(trace, v, shape, _layout_of(model(enclosing)))
        return view_proxy(enclosing)
    value = next((x for c, x in zip(trace.constvars, trace.constvals) if c is v), None)
    if isinstance(value, np.ndarray):
        return proxy_of(value)
    if isinstance(value, Tracer):
        return view_proxy(value)
    return _input_proxy(trace, v, shape)


def _input_proxy(trace: Any, v: Any, shape: tuple[int, ...]) -> Proxy:
    """The layout of an input of the traced function: its array's where the
    trace has it (an eager transform's argument; ``_laid_out``), else
    C-contiguous, which is recorded in ``trace.c_assumed`` for the caller to
    check (``jit``, whose trace sees avals, checks each call's arrays).  A
    member of ``vmap``'s mapped argument or of a loop's ``xs``, and a
    loop's carry, have the layout their ``Member`` gives (``_member_layout``),
    an input marked False none known."""
    index, value = trace.argument_of(v)
    layouts = trace.arg_layouts
    given = None if index is None or layouts is None or index >= len(layouts) \
        else layouts[index]
    layout: tuple[bool, tuple[int, ...]] | None = _UNKNOWN
    if given is False:
        pass
    elif given is not None:
        layout = _member_layout(given)
    elif type(value) is np.ndarray:
        layout = memory_layout(value)
    else:
        if index is not None and trace.c_assumed is not None:
            trace.c_assumed.append(index)
        return c_proxy(shape)
    return _laid_out(trace, v, shape, layout)


#: A layout not known (``_member_layout``).
_UNKNOWN = (False, ())


def _member_layout(member: Member) -> tuple[bool, tuple[int, ...]] | None:
    """The layout (``core.memory_layout``) of one member of a mapped
    argument, as NumPy's loop indexes it out of the argument: the
    argument's layout (an array's own, or a tracer's in its trace, where
    ``jit`` records what it assumed) with the mapped axis indexed away (a
    member ``x[:, i]`` of a C-ordered ``x`` has gaps).  Every member shares
    the argument's strides, so the first stands for all.  With no axis, the
    argument's own layout.  Noted on ``member`` for the caller (``read``)."""
    if not member.read:
        member.layout, member.read = _of_member(member.of, member.axis), True
    return member.layout


def _of_member(of: Any, axis: int | None) -> tuple[bool, tuple[int, ...]] | None:
    whole: Proxy = None
    if type(of) is np.ndarray:
        whole = of
    elif isinstance(of, Tracer):
        whole = model(of) if of._base else _tracer_proxy(of)
    if whole is None:  # not known (or an array of another library: not followed)
        return _UNKNOWN
    if axis is None:
        return memory_layout(whole)
    if whole.shape[axis] == 0:  # no member: nothing depends on its layout
        return None
    return memory_layout(whole[(slice(None),) * axis + (0,)])


def _laid_out(trace: Any, v: Any, shape: tuple[int, ...],
              layout: tuple[bool, tuple[int, ...]] | None) -> Proxy:
    """The proxy of input ``v`` of ``shape`` laid out as ``layout`` says
    (``core.memory_layout``).  An array with gaps (a strided slice) has a
    proxy with gaps in the order of its strides, which NumPy's ufuncs
    follow, and is noted as such: NumPy's reshape of it (a view or a copy by
    its strides, which no proxy models) is not known (``root_order``).  None
    where its strides order nothing."""
    if layout is None:
        return c_proxy(shape)
    dense, axes = layout
    if not axes:
        return None
    order = tuple(a for a, d in enumerate(shape) if d <= 1) + axes
    clipped = _clipped(shape)
    dims = [clipped[a] for a in order]
    if dense:
        proxy = np.empty(dims, np.bool_)
    else:
        state = _orders(trace)
        state.gapped.add(id(v))
        state.vars[id(v)] = v
        dims[-1] *= 2
        proxy = np.empty(dims, np.bool_)[..., ::2]
    return proxy.transpose(np.argsort(order))


def shadow(shape: tuple[int, ...], order: tuple[int, ...]) -> np.ndarray:
    """An ``arange`` of ``shape`` (each element's value its C position) laid
    out in memory in ``order`` (axes from the slowest to the fastest)."""
    values = np.arange(math.prod(shape), dtype=np.intp).reshape(shape)
    if order == tuple(range(len(shape))):
        return values
    out = np.empty([shape[a] for a in order], np.intp).transpose(np.argsort(order))
    out[...] = values
    return out
