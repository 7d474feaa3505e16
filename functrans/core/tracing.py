"""Tracers, traces and ``bind``: ``Tracer`` (a stand-in for an array while a
function is traced), ``JaxprTrace`` (builds a Jaxpr from the binds made
while a function runs) and ``bind``, the single entry point of every
operation.

With no tracer among the operands ``bind`` runs the primitive's impl at once
(``functrans.core.dispatch``); otherwise it records an equation into the
innermost active trace and returns tracers.  There is one kind of trace, a
Jaxpr builder: a tracer of an outer trace used inside an inner one becomes
an input (a constvar) of the inner Jaxpr, the closure conversion that keeps
nested transforms free of perturbation confusion.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from functrans import dtypes
from functrans.core import checks
from functrans.core.avals import _SCALAR_AVALS, ShapedArray, get_aval, register_aval_type
from functrans.core.context import (
    _CONVERSION_ADVICE,
    _state,
    user_frame_summary,
    user_source,
)
from functrans.core.dispatch import apply_impl, check_values, plain_array
from functrans.core.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, has_effect
from functrans.core.primitives import Primitive, install_bind
from functrans.errors import (
    ConcretizationError,
    FunctransError,
    LeakedTracerError,
    TracerConversionError,
)


class Tracer:
    """A stand-in for an array while a function is being traced.

    It carries its aval, the trace that made it and its variable in that
    trace's Jaxpr; under value-carrying tracing it also carries the concrete
    value (``val``), so Python control flow on it works.  Array behaviour
    (operators, methods, ``__array_ufunc__``) is installed by
    ``functrans.numpy``, which owns the NumPy-facing API.
    """

    # In-place updates (``functrans.numpy._inplace``): ``_base`` is the Link of a
    # view to the array it was made from (None for an array that is no view,
    # False for a copy made by ``copy()``, which is then never taken for the
    # input it copies); ``_views`` lists weak references to an array's views.
    __slots__ = ("aval", "_trace", "_var", "val", "_base", "_views", "__weakref__")
    # Make NumPy hand mixed ndarray/tracer operations to the tracer.
    __array_priority__ = 1000

    def __init__(self, trace: JaxprTrace, var: Var, val: Any = None):
        self.aval = var.aval
        self._trace = trace
        self._var = var
        self.val = val
        self._base: Any = None
        self._views: list | None = None

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def _concrete(self, what: str):
        """The value, for a conversion whose result carries no derivative
        (``bool()``, ``int()``, an integer index): the Jaxprs of this trace and of
        the enclosing value-carrying ones are then specialised to it."""
        if self.val is not None:
            # The value may derive from tracers of enclosing value-carrying
            # traces (nested transforms), whose Jaxprs are then specialised too.
            if self._trace.active:
                for t in _state.stack[: self._trace.level]:
                    t.concretized = t.concretized or t.concrete
            self._trace.concretized = True
            return self.val
        self._trace.concretization_failed(what)

    def _constant(self, what: str):
        """The value, for a conversion into a Python or NumPy constant
        (``float()``, ``np.asarray``, ...): refused where the value carries a
        derivative, which the constant would silently drop."""
        if dtypes.is_inexact(self.aval.dtype) and self._trace.carries_derivative(self._var):
            self._trace.conversion_failed(what, self)
        return self._concrete(what)

    def __bool__(self):
        return bool(self._concrete("bool()"))

    def __int__(self):
        # An integer of the value has zero derivative almost everywhere (it
        # jumps between constants), so it is allowed wherever the value is known.
        return int(self._concrete("int()"))

    def __floor__(self):
        return int(np.floor(self._concrete("math.floor()")))

    def __ceil__(self):
        return int(np.ceil(self._concrete("math.ceil()")))

    def __trunc__(self):
        return int(self._concrete("math.trunc()"))  # int() rounds towards zero

    def __float__(self):
        return float(self._constant("float()"))

    def __complex__(self):
        return complex(self._constant("complex()"))

    def __index__(self):
        if self.aval.dtype.kind not in "iu":  # NumPy refuses float and bool indices
            raise TypeError(
                f"{self._trace.fun_name}: a traced {self.aval.str_short()} value was used as "
                f"an index (at {user_frame_summary()}); only integer values can be indices, as "
                "in NumPy: convert it with .astype(int) or functrans.numpy.floor first"
            )
        return int(self._concrete("use as an index (__index__)"))

    def __array__(self, dtype=None, copy=None):
        # Converted to integers or bools (np.int64(x), np.asarray(x, int)), the
        # value carries no derivative to lose, as with int().
        if dtype is not None and np.dtype(dtype).kind in "biu":
            return np.asarray(self._concrete("np.asarray()"), dtype=dtype)
        val = self._constant("np.asarray()")
        return np.asarray(val, dtype=dtype)

    def item(self, *index):
        """``ndarray.item``: a Python scalar, refused where it would drop a derivative."""
        return np.asarray(self._constant("item()")).item(*index)

    def tolist(self):
        """``ndarray.tolist``: nested Python scalars, refused where they would
        drop a derivative."""
        return np.asarray(self._constant("tolist()")).tolist()

    def __round__(self, ndigits=None):
        # Rounding is piecewise constant: no derivative is lost, as with int().
        val = np.asarray(self._concrete("round()"))
        return round(val.item(), ndigits) if ndigits is not None else round(val.item())

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def copy(self, order: str = "K"):
        """``ndarray.copy``: a new tracer of the same value.  It records no
        equation: an in-place update of either one rebinds that one only."""
        copy = Tracer(self._trace, self._var, self.val)
        copy._base = False
        return copy

    def rebind(self, new: Tracer) -> None:
        """Make this tracer stand for ``new``'s value from now on: an in-place
        update (``functrans.numpy._inplace``) keeps the array's identity, so
        every name, list or dict holding it sees the new value."""
        self.aval = new.aval
        self._var = new._var
        self.val = new.val

    def __hash__(self):
        return id(self)

    def __repr__(self):
        val = "" if self.val is None else f" = {self.val!r}"
        return f"Tracer<{self.aval.str_short()}>{val}"

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))


register_aval_type(Tracer)


def memory_layout(x: np.ndarray) -> tuple[bool, tuple[int, ...]] | None:
    """What a trace reads of the memory layout of an array argument (which
    decides whether NumPy's ``reshape`` of it is a view, and the order of
    the arrays NumPy's ufuncs make from it): None for C order; else whether
    its elements fill its memory without gaps in some order of its axes
    with positive strides (C, F or a permutation; a strided slice does not),
    and its axes of two or more elements from the slowest varying to the
    fastest (by the sizes of their strides; none where two are equal or 0,
    which orders nothing).  Arrays of one layout trace alike, so ``jit``
    keys the programs it traces at arrays on this."""
    if x.flags.c_contiguous:
        return None
    axes = sorted((a for a, d in enumerate(x.shape) if d > 1), key=lambda a: -abs(x.strides[a]))
    sizes = [abs(x.strides[a]) for a in axes]
    if 0 in sizes or len(set(sizes)) != len(sizes):
        return False, ()
    step = x.itemsize
    dense = True
    for a in reversed(axes):
        dense = dense and x.strides[a] == step
        step *= x.shape[a]
    return dense, tuple(axes)


def _layout_not_known(t: Tracer) -> Any:
    return False


def _layout_not_followed(t: Tracer, layout: Any) -> None:
    return None


_tracer_layout: Callable[[Tracer], Any] = _layout_not_known
_give_layout: Callable[[Tracer, Any], None] = _layout_not_followed


def install_tracer_layout(rule: Callable[[Tracer], Any],
                          give: Callable[[Tracer, Any], None]) -> None:
    """Make ``rule`` what ``tracer_layout`` asks and ``give`` what
    ``give_layout`` does: ``functrans.numpy``, whose rules follow memory
    layouts through traced code, installs its own."""
    global _tracer_layout, _give_layout
    _tracer_layout, _give_layout = rule, give


def give_layout(t: Tracer, layout: Any) -> None:
    """Make ``layout`` (as ``tracer_layout`` says it) the memory layout of
    ``t``, a result no view that a primitive of no layout rule made, where
    its layout is known otherwise: a loop's result, laid out as the last
    output of its body that NumPy's loop returns."""
    _give_layout(t, layout)


def tracer_layout(t: Tracer) -> Any:
    """The memory layout NumPy would give traced array ``t``, as
    ``memory_layout`` says it (None: C order), or False where it is not
    known (a view, or before ``functrans.numpy`` installs its rules)."""
    return _tracer_layout(t)


class Member:
    """The memory layout an input of a trace has, where the trace sees an
    aval: that of ``of`` (an array, or a tracer of an enclosing trace)
    indexed at ``axis`` as NumPy's loop over it gets its members (``x[i]``
    for axis 0, ``x[:, i]`` for axis 1 ...: a strided view where the axis
    was not the slowest), or ``of``'s own where ``axis`` is None (a loop's
    carry, laid out as the value it starts from).  ``vmap`` and the loops
    of ``functrans.lax`` hand these to the trace; the layout decides whether
    a ``reshape`` is a view (``JaxprTrace.arg_layouts``).

    ``layout`` is what the trace found when it first asked (``read``): a
    loop whose carry's layout is a guess checks it only where it was read.
    """

    __slots__ = ("of", "axis", "read", "layout")

    def __init__(self, of: Any, axis: int | None):
        self.of = of
        self.axis = axis
        self.read = False
        self.layout: Any = None


class JaxprTrace:
    """Builds a Jaxpr from the binds made while a Python function runs.

    ``fun_name`` names the user's function in errors.  With ``concrete=True``
    every tracer also carries its value (computed eagerly from its inputs'
    values), so ``bool()``/``int()`` on it work; a Jaxpr built that way is
    specialised to those values and ``concretized`` says whether it was.
    ``differentiated``: the trace's inputs carry derivatives (the trace of a
    ``grad``, ``jvp``, ``vjp`` ...), so converting a value that depends on them
    into a constant is refused.  ``in_jit``: the trace is jit's, whose inputs
    never have values (``arg_values``, ``arg_layouts`` and ``c_assumed``:
    what its inputs' memory layouts are taken from).  ``tape``: a list the
    trace writes its program into as it records it (the tape's comment,
    below this class), for a guard that compares the programs of two traces
    without building and hashing their structure keys.
    """

    def __init__(self, fun_name: str, concrete: bool = False, reason: str = "",
                 differentiated: bool = False, in_jit: bool = False,
                 tape: list | None = None):
        self.fun_name = fun_name
        self.concrete = concrete
        self.reason = reason or (" inside jit" if in_jit else "")
        self.differentiated = differentiated
        self.in_jit = in_jit
        self.level = len(_state.stack)
        self._eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.constvals: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        #: Inputs and constants standing for tracers of enclosing traces, by id of their Var.
        self._outer: dict[int, Tracer] = {}
        #: The tape the trace writes (the comment below this class), if any.
        self.tape = tape
        self._lean = tape is not None and not concrete
        if tape is not None:
            self._num: dict[Var, int] = {}
            self._vars: list[Var] = []
            self._lits: list[Literal] = []

    # What a new trace starts with, read from the class until set (fewer
    # stores in ``__init__``: eager grad makes a trace per call).
    concretized = False
    active = False
    #: The equation making each Var (by id), for ``carries_derivative``; made
    #: on the first conversion, so recording itself keeps no extra map.
    _producers: dict[int, Eqn] | None = None
    _producers_upto = 0
    #: Whether ``constant`` made a tracer here (only then can values be
    #: known in a trace without values).
    has_constants = False
    #: The arguments the trace's inputs stand for while the function runs
    #: (arrays, or avals where none are at hand), set by ``trace_to_jaxpr``:
    #: where NumPy's answer depends on an input's memory layout (whether
    #: ``reshape`` makes a view), the array's own layout decides it.
    arg_values: Sequence[Any] | None = None
    #: Where a list: the positions of the inputs whose layout was taken to
    #: be C-contiguous for want of an array (``jit`` traces avals), for the
    #: caller to check against the arrays of each call.
    c_assumed: list[int] | None = None
    #: Where a sequence: per input, the ``Member`` whose memory layout it
    #: has (``vmap``'s function gets avals, but each stands for a member of
    #: an argument), False where its layout is not known (a loop's carry
    #: whose layout changes from one iteration to the next), or None where
    #: ``arg_values`` tells.
    arg_layouts: Sequence[Any] | None = None
    #: ``finish``'s result variables, and the program ``closed`` made of them.
    _outvars: list | None = None
    _closed: ClosedJaxpr | None = None
    # With a tape: ``_lean``, whether equations may be written on the tape
    # only (``process``: no value can be known in the trace); ``_num``, the
    # number of each variable the tape names, in the order the trace
    # bound them (inputs, then constants and results as met), and ``_vars``,
    # the variables by those numbers.  The tape's records up to ``_made`` are
    # equations of ``_eqns`` (``_made_vars`` variables bound there); those
    # after are written only, and made equations when ``eqns`` is read
    # (``_lits``: their literal operands, in order).
    _made = 0
    _made_vars = 0

    @property
    def eqns(self) -> list[Eqn]:
        """The equations recorded so far.  A taped trace records the plain
        ones only on its tape (``process``), and makes their equations
        here, on the first look: an eager ``grad`` whose plan guard finds
        the tape it ran last never needs them."""
        tape = self.tape
        if tape is not None and self._made < len(tape):
            self._make_eqns(tape)
        return self._eqns

    def _make_eqns(self, tape: list) -> None:
        """The ``Eqn`` of each equation ``tape``, the trace's, holds past ``_made``."""
        variables, eqns = self._vars, self._eqns
        lits = iter(self._lits)
        k = self._made_vars
        for record in tape[self._made:]:
            head = record[0]
            if head is _INPUT or head is _CONSTANT:
                k += 1
                continue
            if head is _RESULTS:
                break
            prim, params, source, out = record[:4]
            inputs = tuple([variables[i] if type(i) is int else next(lits) for i in record[4:]])
            n_out = len(out) if prim.multiple_results else 1
            eqns.append(Eqn(prim, inputs, tuple(variables[k:k + n_out]), params, source))
            k += n_out
        self._made, self._made_vars = len(tape), k
        self._lits.clear()

    # -- entering and leaving -------------------------------------------

    def __enter__(self):
        stack = _state.stack
        self.level = len(stack)
        stack.append(self)
        self.active = True
        return self

    def __exit__(self, *exc):
        stack = _state.stack
        self.active = False
        if stack and stack[-1] is self:
            stack.pop()
            return
        if self not in stack:
            return  # already unwound with an enclosing trace that ended out of order
        # Traces nest like the with-blocks that make them, so this is a bug in
        # functrans; say so instead of leaving the stack in a wrong state.
        for t in stack[stack.index(self):]:
            t.active = False
        del stack[stack.index(self):]
        if exc[0] is None:
            raise RuntimeError(
                f"functrans: the trace of {self.fun_name!r} ended out of order (internal "
                "error); please report it with the code that triggered it"
            )

    # -- making tracers ----------------------------------------------------

    def argument_of(self, var: Var) -> tuple[int | None, Any]:
        """``(position, argument)`` of the input ``var``: its position among
        the trace's inputs (None where ``var`` is no input) and, while the
        function runs, the argument it stands for (from ``arg_values``: an
        array, a scalar, an aval), else None."""
        index = next((i for i, v in enumerate(self.invars) if v is var), None)
        args = self.arg_values
        if index is None or args is None or index >= len(args):
            return index, None
        return index, args[index]

    def new_arg(self, aval: ShapedArray, val: Any = None, outer: Tracer | None = None,
                shared: bool = False) -> Tracer:
        """A tracer for a new input; ``outer``: the enclosing trace's tracer
        it stands for, if any (its derivative flows through this input);
        ``shared``: ``aval`` is the traces' shared one of its type
        (``interned``) already."""
        var = Var(aval if shared else interned(aval))
        self.invars.append(var)
        tape = self.tape
        if tape is not None:  # _record, written out (eager grad: once per input and call)
            num = self._num
            num[var] = len(num)
            self._vars.append(var)
            tape.append((_INPUT, var.aval))
        if outer is not None:
            self._outer[id(var)] = outer
        return Tracer(self, var, val if self.concrete else None)

    def constant(self, x: np.ndarray) -> Tracer:
        """A tracer of this trace for the constant array ``x``: an array made
        inside traced code that must be traced too (the array API's
        ``asarray(v, device=tracer.device)``).  It carries ``x`` as its value
        even under ``jit``: a constant's value is known and never changes."""
        self.has_constants, self._lean = True, False
        return Tracer(self, self._const_var(x, get_aval(x), lifted=False), x)

    def _input_var(self, x):
        """The Var or Literal standing for operand ``x`` in this trace."""
        if isinstance(x, Tracer):
            if x._trace is self:
                return x._var
            return self._const_var(x, x.aval, lifted=True)
        aval = _SCALAR_AVALS.get(type(x))  # a Python scalar: get_aval's answer, at once
        if aval is not None:
            return Literal(x, aval)
        if type(x) is not np.ndarray and isinstance(x, np.ndarray):
            x = plain_array(x)
        if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
            # x[()] is an immutable NumPy scalar: a Jaxpr (hashed, cached) must not
            # change when the caller later writes into its 0-d array.
            return Literal(x[()], ShapedArray((), x.dtype))
        return self._const_var(x, get_aval(x), lifted=False)

    def _const_var(self, x, aval, lifted):
        var = self._const_ids.get(id(x))
        if var is None:
            if lifted and not _in_this_thread(x._trace):
                raise _leaked(x)
            var = Var(aval)
            self._const_ids[id(x)] = var
            if self.tape is not None:
                self._record(self.tape, _CONSTANT, var)
            if lifted:
                self._outer[id(var)] = x
            self.constvars.append(var)
            self.constvals.append(x)  # which keeps the ids of _const_ids valid
        return var

    def _value_of(self, x, atom):
        if isinstance(x, Tracer):
            return x.val
        return atom.val if type(atom) is Literal else x

    # -- recording ---------------------------------------------------------

    def process(self, prim: Primitive, args: Sequence[Any], params: dict, skip: int = 0):
        """Record ``prim`` applied to ``args``, and the tracers of its
        results.  ``skip``: the library's frames known to stand between the
        caller of ``bind`` and the user's code (``bind_in_wrapper``), which
        the search for the user's line then starts above."""
        if self._lean:
            # Eager grad's path for each operation of the function, written
            # out (an Eqn, the tape's items one by one and the calls took a
            # third of recording one): an equation whose operands are this
            # trace's tracers and Python scalars is only written on the
            # tape, its Eqn made later if ever (``eqns``).
            num = self._num
            n = len(args)
            if 0 < n <= 2 and not prim.multiple_results:
                # The commonest operation, on one or two of this trace's
                # tracers, written out once more: no lists of operands, and
                # the lookup of its result's aval by the avals' ids in full.
                a, b = args[0], args[-1]
                if type(a) is Tracer and a._trace is self and type(b) is Tracer \
                        and b._trace is self:
                    u, w = a._var, b._var
                    if not params:
                        found = _avals_out_by_id.get(
                            (prim, id(u.aval)) if n == 1 else (prim, id(u.aval), id(w.aval)))
                    elif n == 1:
                        # by the params' id where they are ``shared_params``'
                        # (an unshared dict's id is no key)
                        found = _avals_out_by_id.get((prim, id(params), id(u.aval)))
                    else:
                        found = None
                    out = found[0] if found is not None else self._abstract(
                        prim, [u.aval] if n == 1 else [u.aval, w.aval], params)
                    source = user_source(_FROM_PROCESS + skip)
                    self.tape.append((prim, params, source, out, num[u]) if n == 1 else  # type: ignore[union-attr]  # noqa: E501  # _lean: a tape
                                     (prim, params, source, out, num[u], num[w]))
                    var = Var(out)
                    num[var] = len(num)
                    self._vars.append(var)
                    return Tracer(self, var)
                if n == 2 and not params:
                    # One of this trace's tracers and a Python scalar (x * 0.5,
                    # 1.0 - x), written out too: the records of the loop below.
                    if type(a) is Tracer and a._trace is self:
                        scalar = _SCALAR_AVALS.get(type(b))
                        literal_first = False
                    elif type(b) is Tracer and b._trace is self:
                        scalar = _SCALAR_AVALS.get(type(a))
                        literal_first = True
                    else:
                        scalar = None
                    if scalar is not None:
                        if literal_first:
                            literal, u = Literal(a, scalar), b._var
                            found = _avals_out_by_id.get((prim, id(scalar), id(u.aval)))
                        else:
                            literal, u = Literal(b, scalar), a._var
                            found = _avals_out_by_id.get((prim, id(u.aval), id(scalar)))
                        out = found[0] if found is not None else self._abstract(
                            prim, [scalar, u.aval] if literal_first else [u.aval, scalar], params)
                        self._lits.append(literal)
                        var = Var(out)
                        num[var] = len(num)
                        self._vars.append(var)
                        source = user_source(_FROM_PROCESS + skip)
                        self.tape.append(  # type: ignore[union-attr]  # _lean: a tape
                            (prim, params, source, out, literal.key(), num[u]) if literal_first
                            else (prim, params, source, out, num[u], literal.key()))
                        return Tracer(self, var)
            ins: list[Any] = []
            avals: list[ShapedArray] = []
            literals = None
            for x in args:
                if type(x) is Tracer:
                    # Numbered only where it is this trace's variable (None for
                    # another trace's: no variable is two traces').
                    v = x._var
                    ins.append(num.get(v))
                    avals.append(v.aval)
                elif type(x) in _SCALAR_AVALS:
                    literal = Literal(x, _SCALAR_AVALS[type(x)])
                    literals = [literal] if literals is None else [*literals, literal]
                    ins.append(literal.key())
                    avals.append(literal.aval)
                else:
                    break
            else:
                if None not in ins:
                    # _abstract_eval's lookup by the avals' ids, written out
                    # (for one and two operands in full: a starred map costs
                    # more than the lookup).
                    found = (None if params else
                             _avals_out_by_id.get((prim, id(avals[0]))) if n == 1 else
                             _avals_out_by_id.get((prim, id(avals[0]), id(avals[1]))) if n == 2
                             else _avals_out_by_id.get((prim, *map(id, avals))))
                    out = found[0] if found is not None else self._abstract(prim, avals, params)
                    if literals is not None:
                        self._lits.extend(literals)
                    if prim.multiple_results:
                        return self._record_results(prim, params, tuple(out), ins, skip)
                    var = Var(out)
                    num[var] = len(num)
                    self._vars.append(var)
                    self.tape.append((prim, params, user_source(_FROM_PROCESS + skip), out, *ins))  # type: ignore[union-attr]  # noqa: E501  # _lean: a tape
                    return Tracer(self, var)
        tape = self.tape
        if tape is not None and self._made < len(tape):
            self._make_eqns(tape)  # those recorded only first: the equations stay in order
        # One loop and no comprehension on the way of a plain equation: this
        # runs once per equation a trace records (and a comprehension is a
        # function call of its own before Python 3.12).  A tracer of this
        # trace without a value is its variable (for any trace, subclasses
        # included: they may give value-carrying ones another meaning).
        invars = []
        avals = []
        for x in args:
            v = x._var if type(x) is Tracer and x._trace is self and x.val is None \
                else self._input_var(x)
            invars.append(v)
            avals.append(v.aval)
        out = self._abstract(prim, avals, params)
        if prim.multiple_results:
            out = tuple(out)
            outvars = tuple([Var(a) for a in out])
        else:
            outvars = (Var(out),)
        source = user_source(_FROM_PROCESS + skip)
        eqn = Eqn(prim, tuple(invars), outvars, params, source)
        self._eqns.append(eqn)
        if tape is not None:
            num = self._num
            for v in outvars:
                num[v] = len(num)
                self._vars.append(v)
            tape.append((prim, params, source, out,
                         *[v.key() if type(v) is Literal else _number(num, v) for v in invars]))
            self._made, self._made_vars = len(tape), len(self._vars)
        if not (self.concrete or self.has_constants):  # no value can be known
            if prim.multiple_results:
                return [Tracer(self, v) for v in outvars]
            return Tracer(self, outvars[0])
        vals = None
        if outvars and (self.concrete or (self.has_constants and self._only_constants(args)
                                          and not has_effect(eqn))):
            ins = [self._value_of(x, v) for x, v in zip(args, invars)]
            if all(v is not None for v in ins):
                res = _values_while_tracing(eqn, ins) if has_effect(eqn) else \
                    apply_impl(prim, ins, params)
                vals = res if prim.multiple_results else (res,)
        tracers = [
            Tracer(self, v, None if vals is None else vals[i]) for i, v in enumerate(outvars)
        ]
        return tracers if prim.multiple_results else tracers[0]

    def _record_results(self, prim: Primitive, params: dict, out: tuple, ins: list,
                        skip: int) -> list:
        """``process``'s tape-only path for a primitive with multiple results
        (``out``, their avals; ``ins``, the operands as the tape names them)."""
        num, variables = self._num, self._vars
        outvars = [Var(a) for a in out]
        for v in outvars:
            num[v] = len(num)
            variables.append(v)
        self.tape.append((prim, params, user_source(_FROM_PROCESS + 1 + skip), out, *ins))  # type: ignore[union-attr]  # noqa: E501  # _lean: a tape
        return [Tracer(self, v) for v in outvars]

    def _abstract(self, prim: Primitive, avals: list, params: dict) -> Any:
        """The result avals of ``prim`` at ``avals``, an error of its shape
        rule naming the traced function."""
        try:
            return _abstract_eval(prim, avals, params)
        except FunctransError as e:
            raise type(e)(f"{self.fun_name}: {e}") from None

    def _record(self, tape: list, marker: tuple, var: Var) -> None:
        """Write the binding of ``var`` (an input or a constant: ``marker``)
        into ``tape``, the trace's."""
        self._num[var] = len(self._num)
        self._vars.append(var)
        tape.append((marker, var.aval))

    def _only_constants(self, args: Sequence[Any]) -> bool:
        """Whether every traced operand is a value-carrying tracer of this trace
        (in a trace without values: a ``constant`` or a result of constants
        only), so the result's value is known too.  A tracer of an enclosing
        trace does not count: its value would specialise a Jaxpr that jit caches."""
        return all(type(x) is not Tracer or (x._trace is self and x.val is not None)
                   for x in args)

    def to_jaxpr(self, outs: Sequence[Any]) -> ClosedJaxpr:
        """The program of the function whose results are ``outs``."""
        self.finish(outs)
        return self.closed()

    def finish(self, outs: Sequence[Any]) -> None:
        """End the recording with the function's results ``outs`` (bound as
        constants or literals where they are no tracers of this trace):
        the tape is complete, and ``closed`` gives the program."""
        # Loops, not comprehensions (each a call of its own): eager grad ends
        # a trace per call.
        outvars = self._outvars = []
        for x in outs:
            outvars.append(x._var if type(x) is Tracer and x._trace is self
                           else self._input_var(x))
        tape = self.tape
        if tape is not None:
            num = self._num
            results: list[Any] = [_RESULTS]
            for v in outvars:
                results.append(v.key() if type(v) is Literal else _number(num, v))
            tape.append(tuple(results))

    def closed(self) -> ClosedJaxpr:
        """The program recorded, after ``finish``; made on the first call."""
        closed = self._closed
        if closed is None:
            if self._outvars is None:
                raise RuntimeError(f"functrans: the trace of {self.fun_name!r} was asked for "
                                   "its program before its end (internal error)")
            jaxpr = Jaxpr(self.constvars, self.invars, self._outvars, self.eqns)
            closed = self._closed = ClosedJaxpr(jaxpr, self.constvals)
        return closed

    # -- derivatives of values ------------------------------------------------

    def carries_derivative(self, var: Var) -> bool:
        """Whether ``var`` depends on a differentiated input of this trace, or on
        a tracer of an enclosing trace that carries a derivative, through
        float or complex values (integers carry none) and not through a
        primitive whose JVP is marked ``zero_derivative``.  Walks the equations
        back from ``var``: only conversions ask, so recording stays free of
        bookkeeping."""
        producers = self._producers
        if producers is None:
            producers = self._producers = {}
        for e in self.eqns[self._producers_upto:]:  # extended as the trace grows
            for v in e.outputs:
                producers[id(v)] = e
        self._producers_upto = len(self.eqns)
        invars = {id(v) for v in self.invars}
        todo: list[Any] = [var]
        seen: set[int] = set()
        while todo:
            v = todo.pop()
            if type(v) is Literal or id(v) in seen or not dtypes.is_inexact(v.aval.dtype):
                continue
            seen.add(id(v))
            outer = self._outer.get(id(v))
            if outer is not None:
                if outer._trace.carries_derivative(outer._var):
                    return True
            elif id(v) in invars:
                if self.differentiated:
                    return True
            else:
                eqn = producers.get(id(v))
                if eqn is not None and not getattr(eqn.primitive.jvp, "zero_derivative", False):
                    todo.extend(eqn.inputs)
        return False

    # -- errors --------------------------------------------------------------

    def _jitted(self) -> bool:
        return any(t.in_jit for t in _state.stack[: self.level + 1])

    def conversion_failed(self, what: str, tracer: Tracer):
        where = user_frame_summary()
        if self._jitted():
            self.concretization_failed(what)
        raise TracerConversionError(
            f"{self.fun_name}: {what} would turn a traced {tracer.aval.str_short()} value "
            f"that carries a derivative into a constant (at {where}), and its derivative "
            f"would be silently lost. {_CONVERSION_ADVICE[what]}"
        )

    def concretization_failed(self, what: str):
        where = user_frame_summary()
        reason = self.reason or (" inside jit" if self._jitted() else "")
        if what in _CONVERSION_ADVICE:
            raise ConcretizationError(
                f"{self.fun_name}: {what} needs a concrete value, but the value here is "
                f"traced{reason} (at {where}). {_CONVERSION_ADVICE[what]} Or mark the "
                "argument static with static_argnums."
            )
        indexing = (
            " A NumPy array indexed by a traced integer ends up here too: index it "
            "with functrans.numpy.take(array, index, axis=0) instead."
            if what == "use as an index (__index__)" else ""
        )
        raise ConcretizationError(
            f"{self.fun_name}: {what} needs a concrete value, but the value here is "
            f"traced{reason} (at {where}). Python control flow cannot branch on "
            "traced values: use functrans.lax.cond / functrans.numpy.where for "
            "branches, functrans.lax.fori_loop / while_loop for loops, or mark the "
            f"argument static with static_argnums.{indexing}"
        )


# The tape of a trace is the program it records, one tuple per binding in
# the order recorded: an input's or a constant's is ``(_INPUT, aval)`` or
# ``(_CONSTANT, aval)``, an equation's ``(primitive, params, source, result
# aval (a tuple of them for a primitive with multiple results), *operands)``
# (an operand is a variable by the number of its binding, a literal by its
# ``Literal.key()``), and the last ``(_RESULTS, *results)``.  The items in
# each place are of types that never compare equal to another place's (a
# number or a literal's tuple, a dict, a source tuple or None, an aval, a
# primitive or a marker), so two tapes are equal exactly where the two
# traces recorded the same program up to the naming of its variables, as
# ``Jaxpr.__eq__`` compares it (equal avals, params equal under ``==``,
# literals equal bit for bit), from the same lines: a program equal to the
# last one but made elsewhere (whose errors, warnings and debug_nans checks
# would name other lines) is not taken for it.  One flat tuple per binding,
# compared in C item by item (small numbers and the shared avals are the
# same objects): the items written one by one cost a fifth of recording an
# equation, and nested tuples doubled the comparison.
_INPUT = ("input",)
_CONSTANT = ("constant",)
_RESULTS = ("results",)


def _number(num: dict[Var, int], var: Var) -> object:
    """The number of ``var``'s binding in a tape, or, for a variable the trace
    did not bind (a subclass's), a new object that equals nothing: no guard
    can then take the tape for another."""
    n = num.get(var)
    return object() if n is None else n


def _values_while_tracing(eqn: Eqn, ins: list) -> Any:
    """The results of ``eqn``, an equation with an effect, for value-carrying
    tracing: computed with prints muted (``effects_muted``), since the effect
    belongs to the run of the program, not to its tracing."""
    _state.muted += 1
    try:
        return apply_impl(eqn.primitive, ins, eqn.params)
    finally:
        _state.muted -= 1


#: Where ``JaxprTrace.process`` has ``user_source`` start its walk up the
#: stack: past ``user_source``, ``process`` and ``process``'s caller, which is
#: ``bind``, ``bind_in_wrapper`` (which also says how many frames above it to
#: skip) or a subclass's ``process`` (the only callers it has), all library
#: frames the walk would skip anyway, so the first frame walked is the one
#: that called ``bind`` (the user's where a user calls ``core.bind``).  Starting
#: there spares the walk three frames per recorded equation; starting deeper
#: could skip the user's frame.  ``_record_results``, called by ``process``,
#: starts one frame further.
_FROM_PROCESS = 3

#: Output avals of param-less equations by (primitive, *operand avals): most
#: equations of a long program repeat a few (the elementwise ones of a loop
#: body), and one lookup costs less than the shape and dtype rules, the
#: dearest step of recording an elementwise equation.  Equations with params
#: are memoised by the ids of their avals only (``_avals_out_by_id``).
#: Bounded: cleared when full.
_avals_out: dict[tuple, Any] = {}

#: The same answers by (primitive, *ids of the operand avals), each beside
#: the avals asked about, which keeps their ids from being reused while the
#: entry lives: a lookup hashes a few ints where the other one calls
#: ``ShapedArray.__hash__`` per operand.  It finds the avals a trace passes
#: on (each result's is the answer of an earlier lookup) and its inputs'
#: (``interned``).  An equation with params is found here too where each
#: param is an int, a bool, a str, None or a tuple of ints: the key holds
#: each one's name, type and value, since params equal under ``==`` may
#: give other avals (``2`` and ``True`` are equal, ``(0,)`` and ``(0.0,)``
#: too; floats, whose ``0.0`` equals ``-0.0``, are never memoised).
#: Bounded: cleared when full.
_avals_out_by_id: dict[tuple, tuple] = {}

#: The types of the params ``_abstract_eval`` memoises (tuples of ints aside).
_KEYED_PARAMS = frozenset({int, bool, str, type(None)})


#: The dicts ``shared_params`` gave, by their params' names, types and values.
_shared_params: dict[tuple, dict] = {}

#: The same dicts by their ids (each kept alive here, so no other object
#: has its id).
_shared_ids: dict[int, dict] = {}


def shared_params(**params) -> dict:
    """One dict of ``params`` (of hashable values), the same one for every
    call with the same names, types and values: the params of the
    equations a library function binds with ``bind_shared``, whose result
    types are then found by the dict's id (0.1 us) where the params'
    names, types and values are read and hashed on each call (0.7 us).
    Never freed: for the few params each such function uses (``axes`` of
    every axis at each rank, ``y=2``).  Never to be changed."""
    key = tuple((name, type(value), value) for name, value in params.items())
    found = _shared_params.get(key)
    if found is None:
        found = _shared_params[key] = params
        _shared_ids[id(params)] = params
    return found


def _abstract_eval(prim: Primitive, avals: list[ShapedArray], params: dict):
    """``prim.abstract_eval(*avals, **params)``, memoised where ``params`` is
    empty, a ``shared_params`` dict, or of the kinds ``_avals_out_by_id`` says."""
    if params:
        if _shared_ids.get(id(params)) is params:
            # The params' id in the place of the first aval's: no aval's
            # (each key's avals live beside it, the shared dicts for good).
            key = (prim, id(params), *map(id, avals))
        else:
            typed: list[Any] = [prim, *map(id, avals)]
            for name, value in params.items():
                kind = type(value)
                if kind is tuple:
                    for item in value:
                        if type(item) is not int:
                            return prim.abstract_eval(*avals, **params)
                elif kind not in _KEYED_PARAMS:
                    return prim.abstract_eval(*avals, **params)
                typed += (name, kind, value)
            key = tuple(typed)
        found = _avals_out_by_id.get(key)
        if found is not None:
            return found[0]
        out = prim.abstract_eval(*avals, **params)
        if prim.multiple_results:
            out = tuple(out)
        if len(_avals_out_by_id) >= 4096:
            _avals_out_by_id.clear()
        _avals_out_by_id[key] = (out, tuple(avals))
        return out
    # Written out for one and two operands: unpacking a map costs more than
    # the lookup it keys.
    n = len(avals)
    key = ((prim, id(avals[0])) if n == 1 else (prim, id(avals[0]), id(avals[1])) if n == 2
           else (prim, *map(id, avals)))
    found = _avals_out_by_id.get(key)
    if found is not None:
        return found[0]
    equal = (prim, *avals)
    out = _avals_out.get(equal)
    if out is None:
        out = prim.abstract_eval(*avals)
        if prim.multiple_results:
            out = tuple(out)
        if len(_avals_out) >= 4096:
            _avals_out.clear()
        _avals_out[equal] = out
    if len(_avals_out_by_id) >= 4096:
        _avals_out_by_id.clear()
    _avals_out_by_id[key] = (out, tuple(avals))
    return out


#: One aval object for each shape, dtype and weakness met as an input of a
#: trace (``interned``).  Bounded: cleared when full.
_interned: dict[tuple, ShapedArray] = {}


def interned(aval: ShapedArray) -> ShapedArray:
    """The aval equal to ``aval`` that the traces' inputs share, so that the
    abstract evaluations of a function traced again on new arrays of the
    same type are found by the ids of their avals (``_avals_out_by_id``)."""
    key = (aval.shape, aval.dtype, aval.weak_type)
    found = _interned.get(key)
    if found is None:
        if len(_interned) >= 4096:
            _interned.clear()
        found = _interned[key] = aval
    return found


def array_aval(x: np.ndarray) -> ShapedArray:
    """``get_aval(x)`` of a NumPy array: the traces' shared aval of its type
    (``interned``), found without making another to look it up."""
    found = _interned.get((x.shape, x.dtype, False))
    return found if found is not None else interned(get_aval(x))


def _in_this_thread(trace: JaxprTrace) -> bool:
    """Whether ``trace`` is active on the calling thread's stack."""
    stack = _state.stack
    return trace.active and trace.level < len(stack) and stack[trace.level] is trace


def _leaked(t: Tracer) -> LeakedTracerError:
    when = ("was used after that trace ended" if not t._trace.active
            else "was used in another thread, while that trace runs in its own")
    return LeakedTracerError(
        f"a tracer {t.aval.str_short()} created while tracing "
        f"'{t._trace.fun_name}' {when} (at {user_frame_summary()}). It leaked out of "
        "the function, for example through a global, a closure or a list it appended "
        "to; return the value from the function instead."
    )


def current_trace() -> JaxprTrace | None:
    """The innermost active trace of the calling thread."""
    stack = _state.stack
    return stack[-1] if stack else None


def in_jit() -> bool:
    """Whether the calling thread is tracing inside ``jit``: values are never
    concrete there, so no retrace with values is possible."""
    return any(t.in_jit for t in _state.stack)


def bind(prim: Primitive, *args, **params):
    """Apply ``prim`` to ``args``: at once if no operand is a tracer (with
    NumPy, or with the backend of a device array among them), otherwise by
    recording an equation into the innermost trace.  An equation with an
    effect and no results (a print) is recorded whenever a trace is active,
    operands traced or not: there is nothing to compute while tracing, and
    the effect belongs to the runs of the program being traced (a print of
    constants in a loop body prints at each step, a transform re-emitting
    the body keeps it)."""
    other = False
    for x in args:
        if type(x) is not np.ndarray:  # NumPy arrays take the fast path
            if isinstance(x, Tracer):
                stack = _state.stack
                if not (x._trace.active and stack):
                    raise _leaked(x)
                return stack[-1].process(prim, args, params)
            other = True
    if prim.effect and _state.stack and not _abstract_eval(
            prim, [get_aval(x) for x in args], params):
        return _state.stack[-1].process(prim, args, params)
    out = apply_impl(prim, args, params) if other else prim.impl(*args, **params)
    if checks.checking:
        check_values(prim, out if prim.multiple_results else (out,), user_source())
    return out


def bind_in_wrapper(prim: Primitive, *args, **params):
    """``bind``, for a function of the library's own that users call (a
    ``functrans.numpy`` ufunc, an operator of ``Tracer``) to call from its
    own body: that caller is known to be the library's, so the search for
    the user's line of the equation starts at the frame above it, without
    looking at (and so making a frame object of) the caller's frame, which
    cost a fifth of recording an operation.  Only for an innermost trace of
    this class (a subclass's ``process`` counts its own frames) and an
    operand traced there; otherwise ``bind``, whose search walks past the
    caller anyway."""
    for x in args:
        if type(x) is Tracer:
            stack = _state.stack
            if x._trace.active and stack and type(stack[-1]) is JaxprTrace:
                return stack[-1].process(prim, args, params, 1)
            break
    return bind(prim, *args, **params)


def bind_shared(prim: Primitive, params: dict, *args):
    """``bind_in_wrapper(prim, *args, **params)`` for ``params`` from
    ``shared_params``, passed on as that dict: the recorded equation's
    result types are found by its id.  Its body is ``bind_in_wrapper``'s,
    written out: a call between would be one more frame per operation, and
    ``process``'s frame count (``skip``) would differ between the two."""
    for x in args:
        if type(x) is Tracer:
            stack = _state.stack
            if x._trace.active and stack and type(stack[-1]) is JaxprTrace:
                return stack[-1].process(prim, args, params, 1)
            break
    return bind(prim, *args, **params)


install_bind(bind)
