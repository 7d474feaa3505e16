"""Elementwise primitives: unary and binary math as one table row each, plus
``integer_pow`` and ``select``; ``convert_element_type`` (declared in
``broadcasting``, below this family) is presented here too.

Elementwise primitives broadcast like NumPy ufuncs and promote like NumPy 2:
the shape rule broadcasts the operand shapes and the dtype rule asks the
row's NumPy ufunc (``ufunc.resolve_dtypes``, weak Python scalars passed as
their Python type), so a traced program always has the dtypes the same code
has eagerly.  Keeping broadcasting and promotion inside the primitive, rather
than as separate ``broadcast``/``convert`` equations, keeps Jaxprs short and
tracing cheap; transposes undo broadcasting in one helper, ``unbroadcast``.

A row (``Row``) is a whole primitive: ``(name, numpy, deriv)``, the NumPy
function doing the work and its derivative, written with the library's own
ops so that it is differentiable in turn, then keyword columns for whatever
the row needs beyond that (its CUDA expression, numexpr template, dtype rule,
transpose, simplification, docs text).  A unary ``deriv(x, y)`` gives dy/dx
from the input and the output; a binary row gives one ``deriv(x, y, out)``
per operand.  ``ZERO`` marks piecewise-constant functions and those with
integer or bool results; ``LINEAR`` marks the linear ones, whose transpose
rules are written out above the table.  ``declare`` turns a row into a
Primitive with its impl, shape/dtype rule, JVP and batching rules.  Adding
a function is adding a row and its spec row in ``tests/_specs.py`` (which
feeds the impl, JVP, transpose, vmap and GPU tests); ``python -m
functrans.numpy._generate_names --write`` then writes its names: the op
function below (``ew.<name>``) and each NumPy name of its ufunc in
``functrans.numpy``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Callable, NamedTuple

import numpy as np
from functrans.primitives import broadcasting
from functrans.primitives._cuda import Cuda
from functrans.primitives._util import (
    as_array,
    broadcast_shapes,
    check_dtype,
    linear_jvp,
    require_linear,
    same_type,
    zero_jvp,
)
from functrans.primitives.broadcasting import (
    convert_element_type_p,
    elementwise_batch,
    fit,
    reduce_sum_p,
    reshape_p,
)

from functrans.core import (
    Primitive,
    RuleFactory,
    ShapedArray,
    UndefinedPrimal,
    Zero,
    bind,
    get_aval,
    rule_factory,
)
from functrans.dtypes import is_inexact, result_type, ufunc_operand
from functrans.dtypes import kind as dtype_kind
from functrans.errors import DTypeError
from functrans.interpreters import sparsity
from functrans.interpreters.strong_zeros import StrongZeros

# Declared in ``broadcasting`` (below every family) and presented here too.
convert_element_type = broadcasting.convert_element_type
moveaxis = broadcasting.moveaxis

ZERO = "zero derivative"
LINEAR = "linear"


class Row(NamedTuple):
    """One elementwise primitive; the columns after ``deriv`` are optional."""

    name: str
    numpy: Callable
    deriv: Any  # a function, a tuple of functions (binary), ZERO or LINEAR; None with jvp=
    dtype_like: np.ufunc | None = None  # when ``numpy`` is not itself a ufunc
    cuda: str | dict | None = None  # the CUDA C expression (see the table)
    numexpr: str | None = None  # the numexpr template (see the table)
    dtype_rule: Callable | None = None  # avals -> dtype, where the ufunc's resolution is not it
    jvp: Callable | None = None  # a JVP rule of its own, where ``deriv`` cannot say it
    transpose: Callable | None = None  # for rows linear in an operand (marks them linear)
    simplify: Callable | None = None  # algebraic simplification (functrans.passes.simplify)
    doc: str | None = None  # docs/ir.md's text, where the NumPy function's name is not enough
    gpu: Callable | None = None  # the impl on device arrays, for rows with no CUDA expression


def _ufunc_dtype_rule(name: str, ufunc: Any) -> Callable:
    """``avals -> dtype`` by NumPy's own resolution, cached per operand dtypes."""
    cache: dict[tuple, np.dtype] = {}

    def rule(*avals: ShapedArray) -> np.dtype:
        key = tuple((a.dtype, a.weak_type) for a in avals)
        dtype = cache.get(key)
        if dtype is None:
            operands = tuple(ufunc_operand(a.dtype, a.weak_type) for a in avals)
            try:
                dtype = ufunc.resolve_dtypes(operands + (None,))[-1]
            except TypeError:
                types = ", ".join(a.str_short() for a in avals)
                raise DTypeError(
                    f"{name}: not defined for operands of type {types} (NumPy's "
                    f"{ufunc.__name__} has no loop for them); convert with .astype() first"
                ) from None
            cache[key] = dtype
        return dtype

    return rule


# -- helpers for the rules -----------------------------------------------------


def unbroadcast(ct, aval: ShapedArray):
    """Undo NumPy broadcasting: sum ``ct`` down to ``aval``'s shape and dtype."""
    ct_aval = get_aval(ct)  # made again only where ct changes (an array's is a new object)
    ct_shape = ct_aval.shape
    if ct_shape != aval.shape:
        lead = len(ct_shape) - aval.ndim
        axes = tuple(range(lead)) + tuple(
            i + lead for i, d in enumerate(aval.shape) if d == 1 and ct_shape[i + lead] != 1
        )
        if axes:
            ct = bind(reduce_sum_p, ct, axes=axes)
        if get_aval(ct).shape != aval.shape:
            ct = bind(reshape_p, ct, new_sizes=aval.shape)
        ct_aval = get_aval(ct)
    if ct_aval.dtype.kind == "c" and aval.dtype.kind != "c":
        ct = real(ct)  # a real input's cotangent is the real part (JAX's convention)
        ct_aval = get_aval(ct)
    if ct_aval.dtype != aval.dtype:
        ct = bind(convert_element_type_p, ct, new_dtype=aval.dtype)
    return ct


def derivative_jvp(derivs) -> RuleFactory:
    """The JVP rule ``t_out = sum_i deriv_i * t_i`` of a row with derivatives
    ``derivs`` (one per operand, ``ZERO`` for an operand whose tangent does
    not reach the output, such as copysign's ``y``; a ``ZERO`` row takes
    ``zero_jvp``)."""

    @rule_factory
    def make(prim: Primitive) -> Callable:
        def jvp(primals, tangents):
            out = bind(prim, *primals)
            aval = get_aval(out).strip_weak()
            if not is_inexact(aval.dtype):
                return out, Zero(aval)
            t_out = None
            for t, d in zip(tangents, derivs):
                if type(t) is not Zero and d is not ZERO:
                    term = mul(t, d(*primals, out))
                    t_out = term if t_out is None else add(t_out, term)
            return out, Zero(aval) if t_out is None else fit(t_out, aval)

        return jvp

    return make


def declare(row: Row) -> Primitive:
    """The Primitive of a table row: NumPy's broadcasting and dtype resolution
    (or the row's ``dtype_rule``), the impl calling ``row.numpy``, the JVP
    from ``deriv`` (a unary ``LINEAR`` row is its own JVP; the binary linear
    rows give ``jvp=``), elementwise batching, and the row's other columns."""
    dtype_rule = row.dtype_rule or _ufunc_dtype_rule(row.name, row.dtype_like or row.numpy)
    name, fn = row.name, row.numpy

    def abstract_eval(*avals):
        return ShapedArray(broadcast_shapes(name, *avals), dtype_rule(*avals))

    jvp: Callable | RuleFactory | None = row.jvp
    if jvp is None and row.deriv is LINEAR:
        if getattr(fn, "nin", 1) != 1:  # linear_jvp would drop the other operands' tangents
            raise ValueError(f"elementwise row {name!r}: a LINEAR row of several operands "
                             "gives its own jvp=")
        jvp = linear_jvp
    elif jvp is None and row.deriv is ZERO:
        jvp = zero_jvp
    elif jvp is None:
        jvp = derivative_jvp(row.deriv if isinstance(row.deriv, tuple) else (row.deriv,))
    loop = row.dtype_like or (fn if isinstance(fn, np.ufunc) else None)
    return Primitive(
        name, abstract_eval=abstract_eval, impl=lambda *xs: as_array(fn(*xs)), numpy_fn=fn,
        jvp=jvp, transpose=row.transpose, batch=elementwise_batch,
        cuda=None if row.cuda is None else Cuda(row.cuda, loop), simplify=row.simplify,
        numexpr=row.numexpr, linear=row.transpose is not None, doc=row.doc, gpu=row.gpu,
        sparsity=sparsity.elementwise_sparsity(row.deriv),
    )


# -- rules of the rows -------------------------------------------------------------


def _logistic(x):
    # 1/(1+exp(-x)) without overflow for large |x|, in the dtype exp gives x
    # (bool and integers become floats first: -x is undefined on bool).
    x = np.asarray(x)
    if not is_inexact(x.dtype):
        x = x.astype(np.exp(np.zeros((), x.dtype)).dtype)
    if x.dtype.kind == "c":  # no overflow trick: complex numbers are not ordered
        return 1 / (1 + np.exp(-x))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(e.dtype, copy=False)


_rint_dtype = _ufunc_dtype_rule("round", np.rint)


def _round_dtype(aval):
    # np.round keeps integer dtypes; for others it promotes like np.rint.
    return aval.dtype if aval.dtype.kind in "iu" else _rint_dtype(aval)


def _real_part_dtype(aval):
    """real/imag: the float dtype of a complex dtype, other dtypes unchanged."""
    return np.dtype(aval.dtype.char.lower()) if aval.dtype.kind == "c" else aval.dtype


def _tie_weight(x, y, out):
    """d max(x, y)/dx: 1 where x wins, 0.5 at a tie (JAX's convention), else 0
    (the derivative column sparsity detection reads; the JVP is
    ``_extremum_jvp_of``)."""
    return select(eq(x, y), 0.5, select(eq(out, x), 1.0, 0.0))


def _extremum_jvp_of(name: str) -> Callable:
    """maximum/minimum's JVP: each operand's tangent where that operand is the
    result, halved at a tie (``_tie_weight``'s convention), picked by
    ``select`` rather than multiplied by a 0/1 weight.  The losing side's
    tangent (infinite where it is evaluated at a singular point) is then not
    taken, and in reverse mode its cotangent is a strong zero
    (docs/autodiff.md)."""

    def jvp(primals, tangents):
        x, y = primals
        out = bind(binary[name], x, y)
        aval = get_aval(out).strip_weak()
        if not is_inexact(aval.dtype) or all(type(t) is Zero for t in tangents):
            return out, Zero(aval)
        half, one, zero = (aval.dtype.type(v) for v in (0.5, 1, 0))
        share = select(eq(x, y), half, one)
        t_out = None
        for operand, t in zip(primals, tangents):
            if type(t) is not Zero:
                term = select(eq(out, operand), mul(t, share), zero)
                t_out = term if t_out is None else add(t_out, term)
        return out, fit(t_out, aval)

    return jvp


def _pow_dx(x, y):
    # y * x**(y-1), taken as 0 at 0**0 (where x**(y-1) is inf), with the base
    # replaced there so that no inf reaches higher derivatives.  Only there:
    # at y == 0 with x != 0 the formula stands, so its derivative in y
    # (x**-1 at y == 0) is right.
    zero_base = and_(eq(y, 0), eq(x, 0))
    safe_x = select(zero_base, 1.0, x)
    return select(zero_base, 0.0, mul(y, pow(safe_x, sub(y, 1))))


def _copysign_dx(x, y, out):
    """d copysign(x, y) / dx: 1 where x and y have the same sign bit, else -1
    (at x = +-0 too, by the sign bit of the zero), in the output's dtype (the
    two Python floats alone would make it float64)."""
    one = get_aval(out).dtype.type(1)
    return select(eq(signbit(x), signbit(y)), one, -one)


def _hypot_d(a, r):
    # d hypot(a, b)/da = a / r.  At the origin (r == 0, the tip of a cone) it
    # is taken as 0, and for an infinite a as sign(a), the limit there; r is
    # replaced in both places so that no NaN reaches higher derivatives.
    origin, infinite = eq(r, 0), eq(abs(a), math.inf)
    ratio = div(a, select(or_(origin, infinite), 1.0, r))
    return select(infinite, sign(a), select(origin, 0.0, ratio))


def _scalar_power(x, y):
    """``x ** y`` as NumPy's scalars compute it: C's ``pow`` (``powf`` for
    float32) on one element at a time.  ``np.power``'s loops differ from it:
    a scalar exponent 0.5 is ``sqrt`` there (NaN at -inf, -0.0 at -0.0, where
    ``pow`` gives +inf and +0.0), and vectorised float kernels round
    otherwise in the last bit.  ``np.float_power``'s float64 loop is C's
    ``pow``; float32 has no such loop, so its elements go through NumPy's own
    scalars.  Other dtypes' scalars compute as ``np.power`` does."""
    dtype = np.power.resolve_dtypes((_operand_dtype(x), _operand_dtype(y), None))[-1]
    if dtype == np.float64:
        return as_array(np.float_power(x, y))
    if dtype == np.float32:
        powers = _FLOAT32_SCALAR_POWER(np.asarray(x, np.float32), np.asarray(y, np.float32))
        return as_array(np.asarray(powers, np.float32))
    return as_array(np.power(x, y))


def _operand_dtype(v):
    """What ``resolve_dtypes`` takes for an operand: a Python number's type
    (weak), an array's dtype (a Python bool's is bool: NumPy has no weak
    bool)."""
    return type(v) if type(v) in (int, float, complex) else np.asarray(v).dtype


#: An object loop hands it Python floats (exact for float32 values): they are
#: made float32 scalars again so that ``**`` is NumPy's float32 scalar power.
_FLOAT32_SCALAR_POWER = np.frompyfunc(lambda a, b: np.float32(a) ** np.float32(b), 2, 1)


def _pow_dy(x, out):
    # log(x) * x**y, taken as 0 at x == 0 (where x**y is 0 or 1 and constant in y).
    safe_x = select(eq(x, 0), 1.0, x)
    return select(eq(x, 0), 0.0, mul(log(safe_x), out))


def _abs_jvp(primals, tangents):
    """|x|' is sign(x) for real x (1 at 0, JAX's convention) and
    Re(conj(z) t) / |z| for complex z."""
    (x,), (t,) = primals, tangents
    out = abs(x)
    aval = get_aval(out).strip_weak()
    if type(t) is Zero or not is_inexact(aval.dtype):
        return out, Zero(aval)
    if get_aval(x).dtype.kind == "c":
        return out, fit(div(real(mul(conj(x), t)), out), aval)
    one = aval.dtype.type(1)  # in x's dtype: two Python floats select float64
    return out, fit(mul(t, select(ge(x, 0), one, -one)), aval)


def _real_transpose(ct, x):
    if type(ct) is Zero or x.aval.dtype.kind != "c":
        return [Zero(x.aval) if type(ct) is Zero else ct]
    return [bind(convert_element_type_p, ct, new_dtype=x.aval.dtype)]


def _imag_transpose(ct, x):
    if type(ct) is Zero or x.aval.dtype.kind != "c":
        return [Zero(x.aval)]
    # The transpose of z -> Im z (real-linear) is c -> -i c.
    return [mul(bind(convert_element_type_p, ct, new_dtype=x.aval.dtype), -1j)]


def _conj_transpose(ct, x):
    return [Zero(x.aval) if type(ct) is Zero else conj(ct)]


def _neg_transpose(ct, x):
    return [Zero(x.aval) if type(ct) is Zero else neg(ct)]


def _add_jvp(primals, tangents, negate_y=False):
    x, y = primals
    out = sub(x, y) if negate_y else add(x, y)
    aval = get_aval(out).strip_weak()
    tx, ty = tangents
    if type(ty) is not Zero and negate_y:
        ty = neg(ty)
    if type(tx) is Zero and type(ty) is Zero:
        return out, Zero(aval)
    if type(tx) is Zero or type(ty) is Zero:
        return out, fit(ty if type(tx) is Zero else tx, aval)
    return out, fit(add(tx, ty), aval)


def _add_transpose(ct, x, y, negate_y=False):
    cts = []
    for operand, sign in ((x, False), (y, negate_y)):
        if type(operand) is not UndefinedPrimal:
            cts.append(None)
        elif type(ct) is Zero:
            cts.append(Zero(operand.aval))
        else:
            cts.append(unbroadcast(neg(ct) if sign else ct, operand.aval))
    return cts


def _sub_jvp(primals, tangents):
    return _add_jvp(primals, tangents, negate_y=True)


def _sub_transpose(ct, x, y):
    return _add_transpose(ct, x, y, negate_y=True)


def _mul_transpose(ct, x, y):
    """mul is linear in whichever operand is undefined.  A JVP rule never
    multiplies two tangents, but ``linear_transpose`` of a user's ``x * x``
    reaches here with both undefined."""
    require_linear(type(x) is not UndefinedPrimal or type(y) is not UndefinedPrimal,
                   "mul is linear in one operand at a time, not quadratic")
    if type(x) is UndefinedPrimal:
        return [Zero(x.aval) if type(ct) is Zero else unbroadcast(mul(ct, y), x.aval), None]
    return [None, Zero(y.aval) if type(ct) is Zero else unbroadcast(mul(x, ct), y.aval)]


def _div_transpose(ct, x, y):
    require_linear(type(y) is not UndefinedPrimal, "div is linear in its numerator only")
    return [Zero(x.aval) if type(ct) is Zero else unbroadcast(div(ct, y), x.aval), None]


#: ``_exact_identity``'s answers for Python numbers, by operation, value,
#: its type, its sign (``0.0 == -0.0``, and they hash alike) and dtype: the
#: passes ask about each literal operand of every ``add``, ``sub``, ``mul``
#: and ``div`` (1.2 us an answer made).  Bounded: cleared when full.
_identities: dict[tuple, bool] = {}


def _exact_identity(op: str, value, dtype) -> bool:
    """``_identity_of``, remembered for Python numbers."""
    if type(value) not in (int, float):
        return _identity_of(op, value, dtype)
    # (an int has no signed zero, and one beyond float range no float sign)
    sign = math.copysign(1.0, value) if type(value) is float else 0.0
    key = (op, value, type(value), sign, dtype)
    found = _identities.get(key)
    if found is None:
        if len(_identities) >= 4096:
            _identities.clear()
        found = _identities[key] = _identity_of(op, value, dtype)
    return found


def _identity_of(op: str, value, dtype) -> bool:
    """Whether ``x op value`` (and ``value op x`` for add and mul) is ``x`` bit
    for bit for every ``x`` of the result's ``dtype``.  Integers keep the
    integer identities.  In real floating point only ``x + (-0.0)``,
    ``x - 0.0``, ``x * 1`` and ``x / 1`` are identities: ``-0.0 + 0.0`` is
    ``+0.0``, and ``-0.0 - (-0.0)`` is too.  In complex arithmetic only the
    zeros are, with those signs on both parts (a real constant gets a
    ``+0.0`` imaginary part), and never ``* 1``: ``(inf + 1j) * 1`` has a NaN
    part."""
    kind = dtype_kind(np.dtype(dtype))
    if kind in "biu":
        return bool(value == (1 if op in ("mul", "div") else 0))
    v = np.asarray(value)
    if op in ("mul", "div"):
        return kind == "f" and bool(v == 1)
    if not v == 0:  # NaN too
        return False
    parts = [v.real] if kind == "f" else [v.real, v.imag if v.dtype.kind == "c" else 0.0]
    return all((math.copysign(1.0, float(p)) < 0) == (op == "add") for p in parts)


def _drop_identity(op: str, positions=(0, 1)):
    """Simplify rule: ``x op c`` (and ``c op x`` for positions 0 and 1) is
    ``x`` when the constant ``c`` is an exact identity (``_exact_identity``)
    and that changes neither shape nor dtype; where ``c`` only adds axes of
    size 1 (``x`` times the ``ones((1, n))`` a Jacobian's basis seeds), it is
    ``x`` reshaped, a view instead of a broadcasting product (0.3 against
    0.9 us at n=10)."""

    def rule(eqn, ctx):
        out = eqn.outputs[0].aval
        for keep in positions:
            x = eqn.inputs[keep]
            value = ctx.scalar(eqn.inputs[1 - keep])
            if value is None or not _exact_identity(op, value, out.dtype):
                continue
            if same_type(eqn, x):
                return x
            if (x.aval.dtype == out.dtype and x.aval.weak_type == out.weak_type
                    and x.aval.ndim and math.prod(x.aval.shape) == math.prod(out.shape)):
                return broadcasting.reshape_p, (x,), {"new_sizes": out.shape}
        return None

    return rule


_drop_add_identity = _drop_identity("add")
_drop_sub_identity = _drop_identity("sub", positions=(0,))


def _negated(ctx, a):
    """The operand of the ``neg`` equation that produced ``a``, or None."""
    inner = ctx.producer(a)
    return inner.inputs[0] if inner is not None and inner.primitive.name == "neg" else None


def _negated_integer(ctx, a, dtype):
    """``_negated``, only for an integer ``a`` of type ``dtype`` (the
    result's).  Negations merge into a neighbouring operation only in
    integer arithmetic, which wraps and has no signed zero.  In floating
    point, ``-(x - y)`` is ``-0.0`` where ``y - x`` is ``+0.0``, and the NaN
    a two-operand operation returns is one of its operands' (the first, on
    x86), so ``x + (-y)`` gives a NaN ``y`` negated where ``x - y`` gives it
    as it is; that sign shows later (``copysign``, the infinite imaginary
    part of a complex square root).  An integer negated in a narrower type
    and then converted is not the conversion negated either (``-INT_MIN``
    wraps)."""
    if dtype.kind not in "iu" or a.aval.dtype != dtype:
        return None
    return _negated(ctx, a)


def _neg_simplify(eqn, ctx):
    """-(-x) = x;  for integers (``_negated_integer``) also -(x - y) = y - x
    and -((-x) * y) = x * y."""
    x = eqn.inputs[0]
    inner = _negated(ctx, x)
    if inner is not None and same_type(eqn, inner):
        return inner
    dtype = eqn.outputs[0].aval.dtype
    producer = ctx.producer(x)
    if producer is not None and producer.primitive.name == "sub" and dtype.kind in "iu":
        a, b = producer.inputs
        return producer.primitive, (b, a), {}
    if producer is not None and producer.primitive.name == "mul":
        a, b = producer.inputs
        for mine, other in ((a, b), (b, a)):
            inner = _negated_integer(ctx, mine, dtype)
            if inner is not None:
                return producer.primitive, (inner, other), {}
    return None


def _add_simplify(eqn, ctx):
    """x + (-0.0) = x (``_exact_identity``);  for integers x + (-y) = x - y:
    one pass instead of two."""
    dropped = _drop_add_identity(eqn, ctx)
    if dropped is not None:
        return dropped
    x, y = eqn.inputs
    for keep, other in ((x, y), (y, x)):
        inner = _negated_integer(ctx, other, eqn.outputs[0].aval.dtype)
        if inner is not None:
            return binary["sub"], (keep, inner), {}
    return None


def _sub_simplify(eqn, ctx):
    """x - 0.0 = x (``_exact_identity``);  for integers x - (-y) = x + y."""
    dropped = _drop_sub_identity(eqn, ctx)
    if dropped is not None:
        return dropped
    inner = _negated_integer(ctx, eqn.inputs[1], eqn.outputs[0].aval.dtype)
    return (binary["add"], (eqn.inputs[0], inner), {}) if inner is not None else None



_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _reciprocal_dtype(aval):
    """reciprocal: float and complex only (fnp.reciprocal truncates integers)."""
    if not is_inexact(aval.dtype):
        raise DTypeError(f"reciprocal: not defined for operands of type {aval.str_short()} "
                         "here; use functrans.numpy.reciprocal, or convert with .astype()")
    return aval.dtype


def _reciprocal(x):
    """``np.reciprocal`` of float and complex arrays (the shape rule's dtypes,
    also when called eagerly)."""
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    _reciprocal_dtype(ShapedArray((), dtype))
    return np.reciprocal(x)  # a device array's own ufunc, through __array_ufunc__


#: NumPy's complex reciprocal (its loop, operation for operation): the ratio
#: of the smaller part to the larger, then one division for each part.
_CUDA_COMPLEX_RECIPROCAL = (
    "(abs(x.imag()) <= abs(x.real())"
    " ? {T}({R}(1) / (x.real() + x.imag() * (x.imag() / x.real())),"
    " -(x.imag() / x.real()) / (x.real() + x.imag() * (x.imag() / x.real())))"
    " : {T}((x.real() / x.imag()) / (x.real() * (x.real() / x.imag()) + x.imag()),"
    " {R}(-1) / (x.real() * (x.real() / x.imag()) + x.imag())))"
)


def _one_minus_square(x):
    """1 - x^2 without cancellation: as (1 - x)(1 + x) for |x| >= 1/2, where
    1 - x*x loses the digits that x*x rounds away (1e-10 relative at
    x = 1 - 1e-10), and as 1 - x*x below, where the product form's
    derivative, (1 - x) - (1 + x), would cancel instead."""
    return select(ge(abs(x), 0.5), mul(sub(1.0, x), add(1.0, x)), sub(1.0, mul(x, x)))


def _square_minus_one(x):
    """x^2 - 1, as ``_one_minus_square`` negated (arccosh's derivative)."""
    return neg(_one_minus_square(x))


# The ``cuda`` column: the CUDA C expression of the row in its operands ``x``
# (and ``y``), evaluated in the C type ``{T}`` of the operands' loop dtype
# (NumPy's loop for the ufunc; ``{R}`` is its real part type), or a dict of
# variants keyed by dtype kinds (b bool, i signed, u unsigned, f float,
# c complex; None: not available on the GPU).  float32 (and float16, computed
# in float) call the f-suffixed C functions (sinf), which the backend derives
# from the double form; complex uses thrust::complex from CuPy's headers; the
# ``ft_*`` helpers, with NumPy's rules for signs, zeros and NaNs, are in
# ``functrans/backends/cuda.py``.
#
# The numexpr column: the rows numexpr evaluates as NumPy does, as templates
# over the operands.  Arithmetic, sqrt and abs are correctly rounded, so bit
# for bit the same; the transcendental functions listed give NumPy's values at
# NaN, the infinities, signed zeros, overflow and underflow, and elsewhere may
# differ from NumPy's own SIMD loops in the last bit.  expm1, log1p, sinh,
# cosh, arccos, arccosh and arctanh are left out: numexpr's differ even at
# special values (measured on 2**18 random and special float64 values).

# fmt: off
UNARY = [
    Row("neg",       np.negative,  LINEAR, cuda="-x", numexpr="(-{0})",
        transpose=_neg_transpose, simplify=_neg_simplify),
    Row("exp",       np.exp,       lambda x, y: y, cuda="exp(x)", numexpr="exp({0})"),
    Row("exp2",      np.exp2,      lambda x, y: mul(y, _LN2),
        cuda={"c": "exp(x * {R}(0.6931471805599453))", "f": "exp2(x)"}),
    Row("log",       np.log,       lambda x, y: div(1.0, x), cuda="log(x)", numexpr="log({0})"),
    Row("log2",      np.log2,      lambda x, y: div(1.0 / _LN2, x),
        cuda={"c": "log(x) / {R}(0.6931471805599453)", "f": "log2(x)"}),
    Row("log10",     np.log10,     lambda x, y: div(1.0 / _LN10, x),
        # NumPy's complex log10 scales log(x) by log10(e), part by part.
        cuda={"c": "log(x) * {R}(0.4342944819032518)", "f": "log10(x)"}),
    Row("log1p",     np.log1p,     lambda x, y: div(1.0, add(x, 1.0)),
        cuda={"c": "log({T}(1) + x)", "f": "log1p(x)"}),
    # exp(x), not expm1(x) + 1, which cancels for x < 0: at x = -30 it was
    # off by 2e-4 relative, and 0 below -37.
    Row("expm1",     np.expm1,     lambda x, y: exp(x),
        cuda={"c": "exp(x) - {T}(1)", "f": "expm1(x)"}),
    Row("sin",       np.sin,       lambda x, y: cos(x), cuda="sin(x)", numexpr="sin({0})"),
    Row("cos",       np.cos,       lambda x, y: neg(sin(x)), cuda="cos(x)", numexpr="cos({0})"),
    Row("tan",       np.tan,       lambda x, y: add(1.0, mul(y, y)), cuda="tan(x)",
        numexpr="tan({0})"),
    Row("arcsin",    np.arcsin,    lambda x, y: div(1.0, sqrt(_one_minus_square(x))),
        cuda="asin(x)", numexpr="arcsin({0})"),
    Row("arccos",    np.arccos,    lambda x, y: div(-1.0, sqrt(_one_minus_square(x))),
        cuda="acos(x)"),
    Row("arctan",    np.arctan,    lambda x, y: div(1.0, add(1.0, mul(x, x))), cuda="atan(x)",
        numexpr="arctan({0})"),
    Row("sinh",      np.sinh,      lambda x, y: cosh(x), cuda="sinh(x)"),
    Row("cosh",      np.cosh,      lambda x, y: sinh(x), cuda="cosh(x)"),
    Row("tanh",      np.tanh,      lambda x, y: sub(1.0, mul(y, y)), cuda="tanh(x)",
        numexpr="tanh({0})"),
    Row("arcsinh",   np.arcsinh,   lambda x, y: div(1.0, sqrt(add(mul(x, x), 1.0))),
        cuda="asinh(x)", numexpr="arcsinh({0})"),
    Row("arccosh",   np.arccosh,   lambda x, y: div(1.0, sqrt(_square_minus_one(x))),
        cuda="acosh(x)"),
    Row("arctanh",   np.arctanh,   lambda x, y: div(1.0, _one_minus_square(x)),
        cuda="atanh(x)"),
    # A row of its own for complex numbers, where NumPy's reciprocal is not its
    # division 1 / x (another rounding, and other values at zeros and
    # infinities); x ** -1 is this function in NumPy.
    Row("reciprocal", _reciprocal, lambda x, y: neg(mul(y, y)), dtype_like=np.reciprocal,
        dtype_rule=_reciprocal_dtype,
        cuda={"f": "{T}(1) / x", "c": _CUDA_COMPLEX_RECIPROCAL},
        doc="`np.reciprocal` of float and complex numbers"),
    Row("sqrt",      np.sqrt,      lambda x, y: div(0.5, y), cuda="sqrt(x)", numexpr="sqrt({0})"),
    Row("cbrt",      np.cbrt,      lambda x, y: div(1.0, mul(3.0, mul(y, y))), cuda="cbrt(x)"),
    Row("abs",       np.absolute,  None, jvp=_abs_jvp,
        cuda={"bu": "x", "i": "(x < 0 ? -x : x)", "f": "fabs(x)", "c": "abs(x)"},
        numexpr="abs({0})"),
    Row("sign",      np.sign,      ZERO,
        cuda={"u": "(x > 0)", "i": "((x > 0) - (x < 0))",
              "f": "(x > 0 ? {T}(1) : (x < 0 ? {T}(-1) : (x == 0 ? {T}(0) : x)))",
              "c": "(x == {T}(0) ? {T}(0) : x / abs(x))"}),
    Row("floor",     np.floor,     ZERO, cuda={"biu": "x", "f": "floor(x)"}),
    Row("ceil",      np.ceil,      ZERO, cuda={"biu": "x", "f": "ceil(x)"}),
    Row("trunc",     np.trunc,     ZERO, cuda={"biu": "x", "f": "trunc(x)"}),
    Row("round",     np.round,     ZERO, dtype_rule=_round_dtype,
        cuda={"biu": "x", "f": "rint(x)", "c": "{T}(rint(x.real()), rint(x.imag()))"},
        doc="`np.round` (half to even); integer dtypes are kept"),
    Row("signbit",   np.signbit,   ZERO, cuda={"f": "signbit(x)"}),
    Row("is_finite", np.isfinite,  ZERO,
        cuda={"biu": "true", "f": "isfinite(x)",
              "c": "(isfinite(x.real()) && isfinite(x.imag()))"}),
    Row("logistic",  _logistic,    lambda x, y: mul(y, sub(1.0, y)), dtype_like=np.exp,
        cuda={"f": "(x >= 0 ? {T}(1) / ({T}(1) + exp(-x)) : exp(x) / ({T}(1) + exp(x)))",
              "c": "{T}(1) / ({T}(1) + exp(-x))"},
        doc="`1 / (1 + exp(-x))`, computed without overflow"),
    Row("not",       np.invert,    ZERO, cuda={"b": "!x", "iu": "~x"},
        doc="`np.invert`: logical not on bool, bitwise not on integers"),
    # np.asarray first: np.real(True) is the Python int 1 (bool's .real), not a bool.
    Row("real",      lambda x: np.real(np.asarray(x)), LINEAR, dtype_like=np.absolute,
        dtype_rule=_real_part_dtype, transpose=_real_transpose,
        cuda={"c": "x.real()", "*": "x"},
        doc="`np.real(x)`: the real part (real inputs pass through)"),
    Row("imag",      lambda x: np.imag(np.asarray(x)), LINEAR, dtype_like=np.absolute,
        dtype_rule=_real_part_dtype, transpose=_imag_transpose,
        cuda={"c": "x.imag()", "*": "{T}(0)"},
        doc="`np.imag(x)`: the imaginary part (zeros for real inputs)"),
    Row("conj",      np.conjugate, LINEAR, cuda={"c": "conj(x)", "*": "x"},
        transpose=_conj_transpose),
]

BINARY = [
    Row("add",      np.add,           LINEAR, jvp=_add_jvp, transpose=_add_transpose,
        simplify=_add_simplify, cuda={"b": "(x || y)", "*": "x + y"}, numexpr="({0} + {1})"),
    Row("sub",      np.subtract,      LINEAR, jvp=_sub_jvp, transpose=_sub_transpose,
        simplify=_sub_simplify, cuda="x - y", numexpr="({0} - {1})"),
    Row("mul",      np.multiply,      (lambda x, y, out: y,
                                       lambda x, y, out: x),
        transpose=_mul_transpose, simplify=_drop_identity("mul"),
        cuda={"b": "(x && y)", "*": "x * y"}, numexpr="({0} * {1})"),
    Row("div",      np.true_divide,   (lambda x, y, out: div(1.0, y),
                                       lambda x, y, out: neg(div(out, y))),
        transpose=_div_transpose, simplify=_drop_identity("div", positions=(0,)),
        cuda={"c": "ft_cdiv(x, y)", "*": "x / y"},  # complex: NumPy's (Smith's) division
        numexpr="({0} / {1})"),
    Row("floordiv", np.floor_divide,  ZERO,
        cuda={"i": "ft_floordiv_s(x, y)", "u": "ft_floordiv_u(x, y)",
              "f": "ft_floordiv_f(x, y)"}),
    Row("rem",      np.remainder,     (lambda x, y, out: 1.0,
                                       lambda x, y, out: neg(floordiv(x, y))),
        cuda={"i": "ft_rem_s(x, y)", "u": "ft_rem_u(x, y)", "f": "ft_rem_f(x, y)"}),
    Row("pow",      np.power,         (lambda x, y, out: _pow_dx(x, y),
                                       lambda x, y, out: _pow_dy(x, out)),
        cuda={"iu": "ft_ipow(x, y)", "f": "pow(x, y)", "c": "ft_cpow(x, y)"}),
    Row("scalar_pow", _scalar_power,  (lambda x, y, out: _pow_dx(x, y),
                                       lambda x, y, out: _pow_dy(x, out)),
        dtype_like=np.power, cuda={"iu": "ft_ipow(x, y)", "f": "pow(x, y)", "c": "ft_cpow(x, y)"},
        doc="`s ** y` of a NumPy scalar `s`: C's `pow` for floats, which `np.power`'s "
            "loops are not everywhere (their exponent 0.5 is `sqrt`, their float64 "
            "kernels may be vectorised ones)"),
    Row("max",      np.maximum,       (_tie_weight,
                                       lambda x, y, out: _tie_weight(y, x, out)),
        jvp=_extremum_jvp_of("max"),
        # floats: NaN wins, and a tie (0 and -0) gives y, as NumPy's loops.
        cuda={"b": "(x || y)", "iu": "(x >= y ? x : y)", "f": "((x > y || x != x) ? x : y)",
              "c": "ft_cmax(x, y)"}),
    Row("min",      np.minimum,       (_tie_weight,
                                       lambda x, y, out: _tie_weight(y, x, out)),
        jvp=_extremum_jvp_of("min"),
        cuda={"b": "(x && y)", "iu": "(x <= y ? x : y)", "f": "((x < y || x != x) ? x : y)",
              "c": "ft_cmin(x, y)"}),
    Row("atan2",    np.arctan2,       (lambda x, y, out: div(y, add(mul(x, x), mul(y, y))),
                                       lambda x, y, out: div(neg(x), add(mul(x, x), mul(y, y)))),
        cuda="atan2(x, y)", numexpr="arctan2({0}, {1})"),
    # A row of its own, not a rewrite through max/min and |.|: their ties
    # (|x| == |y|, x == 0) would split derivatives 0.5/0.5 and lose the
    # curvature of a smooth function.
    Row("copysign", np.copysign,      (lambda x, y, out: _copysign_dx(x, y, out), ZERO),
        cuda={"f": "copysign(x, y)"}),
    Row("hypot",    np.hypot,         (lambda x, y, out: _hypot_d(x, out),
                                       lambda x, y, out: _hypot_d(y, out)),
        cuda="hypot(x, y)"),
    Row("eq",       np.equal,         ZERO, cuda="x == y"),
    Row("ne",       np.not_equal,     ZERO, cuda="x != y"),
    Row("lt",       np.less,          ZERO, cuda={"c": "ft_clt(x, y)", "*": "x < y"}),
    Row("le",       np.less_equal,    ZERO, cuda={"c": "ft_cle(x, y)", "*": "x <= y"}),
    Row("gt",       np.greater,       ZERO, cuda={"c": "ft_clt(y, x)", "*": "x > y"}),
    Row("ge",       np.greater_equal, ZERO, cuda={"c": "ft_cle(y, x)", "*": "x >= y"}),
    # and, or, xor are logical on bool operands.
    Row("and",      np.bitwise_and,   ZERO, cuda={"b": "(x && y)", "iu": "x & y"},
        doc="`np.bitwise_and`: logical and on bool"),
    Row("or",       np.bitwise_or,    ZERO, cuda={"b": "(x || y)", "iu": "x | y"},
        doc="`np.bitwise_or`: logical or on bool"),
    Row("xor",      np.bitwise_xor,   ZERO, cuda={"b": "(x != y)", "iu": "x ^ y"},
        doc="`np.bitwise_xor`: logical xor on bool"),
    # NumPy's shifts are defined for every count: one of the type's width or
    # more (or negative) shifts everything out, to 0 (or -1 for x < 0 >> y),
    # where C leaves it undefined.
    Row("shift_left",  np.left_shift,  ZERO,
        cuda={"iu": "((y >= 0 && y < 8 * sizeof({T})) ? {T}(x << y) : {T}(0))"}),
    Row("shift_right", np.right_shift, ZERO,
        cuda={"iu": "((y >= 0 && y < 8 * sizeof({T})) ? {T}(x >> y) "
                    ": (x < 0 ? {T}(-1) : {T}(0)))"}),
    # The next float after x towards y: x itself to first order, so its
    # derivative is 1 in x and 0 in y (a rounding step, as in floor, carries none).
    Row("nextafter",   np.nextafter,   (lambda x, y, out: 1.0, ZERO),
        cuda={"f": "nextafter(x, y)"}),
]
# fmt: on

#: Primitive objects by name, for the unary and binary rows.
unary = {r.name: declare(r) for r in UNARY}
binary = {r.name: declare(r) for r in BINARY}

#: The ufuncs whose float results IEEE 754 fixes (correctly rounded, or
#: exact), so any correct implementation, Numba's scalar code included,
#: gives NumPy's bits; other float ufuncs (``sin``, ``exp``, ``tanh``, ...)
#: may differ in the last bits between libraries (the native tier and
#: automatic tiering ask this set).
IEEE_EXACT = frozenset({
    np.add, np.subtract, np.multiply, np.true_divide, np.sqrt, np.negative, np.positive,
    np.absolute, np.floor, np.ceil, np.trunc, np.rint, np.equal, np.not_equal, np.less,
    np.less_equal, np.greater, np.greater_equal, np.isfinite, np.isnan, np.isinf,
    np.signbit, np.copysign, np.square, np.conjugate, np.logical_and, np.logical_or,
    np.logical_xor, np.logical_not,
})


# -- integer_pow: x ** y for a static Python int y ------------------------


def _integer_pow_impl(x, *, y):
    # x * x is cheaper than np.power, but bool * bool stays bool where
    # np.power (and the shape rule) give an integer.
    if y == 2 and np.asarray(x).dtype != np.bool_:
        return as_array(np.multiply(x, x))
    return as_array(np.power(x, y))


_pow_dtype = _ufunc_dtype_rule("integer_pow", np.power)
_WEAK_INT = ShapedArray((), np.int64, weak_type=True)
#: The result aval by operand aval (the exponent's value never changes it):
#: ``x ** 2`` is common in traced code, and the core memoises only
#: equations without params.  Bounded: cleared when full.
_pow_avals: dict[ShapedArray, ShapedArray] = {}


def _integer_pow_abstract_eval(x, *, y):
    if not isinstance(y, int):
        raise DTypeError(f"integer_pow: exponent must be a Python int, got {y!r}")
    out = _pow_avals.get(x)
    if out is None:
        out = ShapedArray(x.shape, _pow_dtype(x, _WEAK_INT))
        if len(_pow_avals) >= 4096:
            _pow_avals.clear()
        _pow_avals[x] = out
    return out


def _integer_pow_jvp(primals, tangents, *, y):
    (x,), (t,) = primals, tangents
    out = integer_pow(x, y)
    aval = get_aval(out).strip_weak()
    if type(t) is Zero or y == 0 or not is_inexact(aval.dtype):
        return out, Zero(aval)
    d = y if y == 1 else mul(y, x if y == 2 else integer_pow(x, y - 1))
    return out, fit(t if y == 1 else mul(t, d), aval)


def _integer_pow_cuda(y: int):
    """A product of ``|y|`` factors for small exponents (negative powers of
    floats are its reciprocal), else C's pow for floats, as NumPy; squaring
    in a loop for integers; NumPy's own algorithm for complex numbers."""
    if y == 0:
        return {"c": "ft_cpow_n(x, 0)", "*": "{T}(1)"}
    if builtins.abs(y) <= 4:
        product = " * ".join(["x"] * builtins.abs(y))
        return {"f": product if y > 0 else f"{{T}}(1) / ({product})",
                "c": f"ft_cpow_n(x, {y})", "*": product if y > 0 else f"ft_ipow(x, {y})"}
    return {"f": f"pow(x, {{T}}({y}))", "c": f"ft_cpow_n(x, {y})", "*": f"ft_ipow(x, {y})"}


integer_pow_p = Primitive(
    "integer_pow",
    abstract_eval=_integer_pow_abstract_eval,
    impl=_integer_pow_impl,
    jvp=_integer_pow_jvp,
    batch=elementwise_batch,
    cuda=Cuda(_integer_pow_cuda, args=("x",)),
    # Generated code squares with the ufunc itself (bool squares stay with the impl).
    numpy_kernel=lambda avals, *, y: np.square if y == 2 and avals[0].dtype != np.bool_ else None,
    # x * x is what the impl computes for y == 2; numexpr's other powers multiply
    # where NumPy calls pow, so they are not exact.
    numexpr=lambda y: "({0} * {0})" if y == 2 else None,
    sparsity=sparsity.pow_sparsity,
    doc="`x ** y` for a static Python int `y` (`x * x` when `y == 2`)",
)


# -- select: np.where(pred, on_true, on_false) ----------------------------


def _select_abstract_eval(pred, on_true, on_false):
    check_dtype("select", pred, "b", "a bool predicate")
    shape = broadcast_shapes("select", pred, on_true, on_false)
    return ShapedArray(shape, result_type(on_true, on_false))


def _select_jvp(primals, tangents):
    pred, on_true, on_false = primals
    _, t_true, t_false = tangents
    out = select(pred, on_true, on_false)
    aval = get_aval(out).strip_weak()
    if type(t_true) is Zero and type(t_false) is Zero or not is_inexact(aval.dtype):
        return out, Zero(aval)
    # One branch's tangent where it is taken, a strong zero elsewhere: a
    # StrongZeros record, which jvp_eval carries on (docs/autodiff.md).
    for given, other, sense in ((t_true, t_false, True), (t_false, t_true, False)):
        if type(other) is Zero and get_aval(given).shape == aval.shape:
            return out, StrongZeros(pred, sense, fit(given, aval))
    zero = np.zeros((), aval.dtype)
    t_true = zero if type(t_true) is Zero else t_true
    t_false = zero if type(t_false) is Zero else t_false
    return out, fit(select(pred, t_true, t_false), aval)


def _select_transpose(ct, pred, on_true, on_false):
    """Each branch gets the cotangent where it was taken and a strong zero
    elsewhere: a ``StrongZeros`` record, which the backward pass carries
    through the products by derivatives before it writes the ``select``
    (docs/autodiff.md).  A branch broadcast by the select is summed, so its
    zeros are written out here."""
    require_linear(type(pred) is not UndefinedPrimal, "select is not linear in its predicate")
    cts: list[Any] = [None]
    for branch, keep in ((on_true, True), (on_false, False)):
        if type(branch) is not UndefinedPrimal:
            cts.append(None)
        elif type(ct) is Zero:
            cts.append(Zero(branch.aval))
        else:
            masked = StrongZeros(pred, keep, ct)
            if branch.aval.shape != get_aval(ct).shape:
                masked = unbroadcast(masked.materialize(), branch.aval)
            elif get_aval(ct).dtype != branch.aval.dtype:
                masked = StrongZeros(pred, keep, unbroadcast(ct, branch.aval))
            cts.append(masked)
    return cts


select_p = Primitive(
    "select",
    abstract_eval=_select_abstract_eval,
    impl=lambda pred, on_true, on_false: as_array(np.where(pred, on_true, on_false)),
    jvp=_select_jvp,
    transpose=_select_transpose,
    batch=elementwise_batch,
    cuda=Cuda("(p ? x : y)", args=("p", "x", "y")),
    linear=True,
    sparsity=sparsity.select_sparsity,
    doc="`np.where(pred, on_true, on_false)`; `pred` is bool, all three broadcast",
)


# -- plain functions over the primitives, for rules and for functrans.numpy ----


def _op(prim: Primitive) -> Callable:
    def op(*xs):
        return bind(prim, *xs)

    op.__name__ = op.__qualname__ = prim.name
    return op


Op = Callable[..., Any]

#: One function per table row, binding its primitive: ``sin(x)``, ``add(x, y)``.
#: Python keywords get a trailing underscore (``not_``, ``and_``, ``or_``).
# -- BEGIN GENERATED by python -m functrans.numpy._generate_names; do not edit
neg: Op = _op(unary["neg"])
exp: Op = _op(unary["exp"])
exp2: Op = _op(unary["exp2"])
log: Op = _op(unary["log"])
log2: Op = _op(unary["log2"])
log10: Op = _op(unary["log10"])
log1p: Op = _op(unary["log1p"])
expm1: Op = _op(unary["expm1"])
sin: Op = _op(unary["sin"])
cos: Op = _op(unary["cos"])
tan: Op = _op(unary["tan"])
arcsin: Op = _op(unary["arcsin"])
arccos: Op = _op(unary["arccos"])
arctan: Op = _op(unary["arctan"])
sinh: Op = _op(unary["sinh"])
cosh: Op = _op(unary["cosh"])
tanh: Op = _op(unary["tanh"])
arcsinh: Op = _op(unary["arcsinh"])
arccosh: Op = _op(unary["arccosh"])
arctanh: Op = _op(unary["arctanh"])
reciprocal: Op = _op(unary["reciprocal"])
sqrt: Op = _op(unary["sqrt"])
cbrt: Op = _op(unary["cbrt"])
abs: Op = _op(unary["abs"])
sign: Op = _op(unary["sign"])
floor: Op = _op(unary["floor"])
ceil: Op = _op(unary["ceil"])
trunc: Op = _op(unary["trunc"])
round: Op = _op(unary["round"])
signbit: Op = _op(unary["signbit"])
is_finite: Op = _op(unary["is_finite"])
logistic: Op = _op(unary["logistic"])
not_: Op = _op(unary["not"])
real: Op = _op(unary["real"])
imag: Op = _op(unary["imag"])
conj: Op = _op(unary["conj"])
add: Op = _op(binary["add"])
sub: Op = _op(binary["sub"])
mul: Op = _op(binary["mul"])
div: Op = _op(binary["div"])
floordiv: Op = _op(binary["floordiv"])
rem: Op = _op(binary["rem"])
pow: Op = _op(binary["pow"])
scalar_pow: Op = _op(binary["scalar_pow"])
max: Op = _op(binary["max"])
min: Op = _op(binary["min"])
atan2: Op = _op(binary["atan2"])
copysign: Op = _op(binary["copysign"])
hypot: Op = _op(binary["hypot"])
eq: Op = _op(binary["eq"])
ne: Op = _op(binary["ne"])
lt: Op = _op(binary["lt"])
le: Op = _op(binary["le"])
gt: Op = _op(binary["gt"])
ge: Op = _op(binary["ge"])
and_: Op = _op(binary["and"])
or_: Op = _op(binary["or"])
xor: Op = _op(binary["xor"])
shift_left: Op = _op(binary["shift_left"])
shift_right: Op = _op(binary["shift_right"])
nextafter: Op = _op(binary["nextafter"])
# -- END GENERATED


def integer_pow(x, y: int):
    return bind(integer_pow_p, x, y=y)


def select(pred, on_true, on_false):
    return bind(select_p, pred, on_true, on_false)
