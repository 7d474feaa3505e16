"""Dense batched tangents scaled elementwise, kept as a product until a
contraction: the dense counterpart of ``structured``'s bands.

Once the input basis of a ``hessian``/``jacfwd`` meets a matrix product it
is dense: in a GLM's Hessian the basis pushed through ``X @ w`` is ``X.T``
(rows x n; ``structured``'s contraction rule writes it from ``X`` without
a product with the basis, its zeros structural).  The linear program then
scales it elementwise by unbatched residuals (the sigmoid's derivative,
signs, masks), each one a pass over ``rows * n`` elements, and contracts it
with ``X`` again.  Here such a value
is ``Scaled``: ``T[g, ...] = root[g, ...] * factor[...]``, the dense batched
``root`` left alone and the scalings multiplied into the unbatched
``factor`` (``O(n)`` each).  At a ``dot_general`` that contracts every axis
along which the factor varies, the factor goes onto the other (unbatched)
operand instead: ``(root * f) . A == root . (f * A)``, so the Hessian is
``X.T @ (d[:, None] * X)``, the hand-written form.  Anything else gets the
value as the batched program computes it (``dense`` replays the equations
that made it through their batching rules), bit for bit and at that
program's cost: the factors are ``O(n)`` work left for dead-code elimination.

A ``select`` by an unbatched mask between such a value and an unbatched one
makes the masked entries that unbatched value (the same for every row), kept
beside the product and scaled with it; at the contraction the masked
entries are zeroed in the root and the factor, and their own product
added back, so a NaN in the root, the factor or the masked values reaches
only what it reaches in the batched program (less, where the root is the
basis contracted with a matrix: a NaN of ``X`` stays in its own entries of
``X.T``, where the batched push's ``nan * 0`` spreads it along its row).  The root is zeroed under a
``cond`` on whether any entry is masked: a pass over it costs as much as
the products around it, and is the identity where nothing is masked.

Semantics: a contraction regroups products (``(b * u) * v`` is ``b * (u * v)``,
``b * u + b * v`` is ``b * (u + v)``, a sum over the contracted axes is split
into the unmasked and the masked entries), so results agree with the
batched program within floating-point reassociation, not bit for bit: a
value that over- or underflows in one grouping only, or the sign of a zero
sum, may differ; where the contracted operand holds an inf, an entry the
batched program gives as +-inf may come out NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from functrans.core import ShapedArray, bind, get_aval, registry, trace_to_jaxpr


class Scaled:
    """A batched tangent of per-row ``aval``: ``root`` (a dense batched
    value and its batch axis, the same number of elements per row in the
    same raveled order, left in its layout) times the
    unbatched ``factor`` of ``aval``'s shape (None: one), except where the
    mask is set (None: nowhere): there every row holds the unbatched
    ``masked`` value.  The mask is kept as the selects' predicates that make
    it, ``(predicate, negated)`` pairs (any of the same size and raveled
    order), so that values masked by the same selects are known to be."""

    __slots__ = ("root", "factor", "aval", "mask", "masked", "made_by", "written")

    def __init__(self, root: Any, factor: Any, aval: ShapedArray, mask: Any = None,
                 masked: Any = None):
        self.root, self.factor, self.aval = root, factor, aval
        self.mask, self.masked = mask, masked
        # The equation and operands that made it, for ``dense``; its result.
        self.made_by: tuple | None = None
        self.written: tuple | None = None

    def with_(self, factor: Any, aval: ShapedArray | None = None, mask: Any = None,
              masked: Any = None) -> Scaled:
        return Scaled(self.root, factor, aval or self.aval, mask, masked)


def _prim(name: str):
    return registry[name]


def _unbatched(v) -> bool:
    return type(v) is tuple and v[1] is None


def _scaling(v, out: ShapedArray) -> bool:
    """An unbatched operand of the result's dtype (or weakly typed, as from
    a Python scalar) that broadcasts to the result's shape."""
    if not _unbatched(v):
        return False
    aval = get_aval(v[0])
    try:
        fits = np.broadcast_shapes(aval.shape, out.shape) == out.shape
    except ValueError:
        return False
    return fits and (aval.dtype == out.dtype or aval.weak_type)


def _factor(s: Scaled):
    """The factor written out (ones where it is None)."""
    if s.factor is not None:
        return s.factor
    return np.ones(s.aval.shape, s.aval.dtype)


def _as_scaled(v, out: ShapedArray, rows: int):
    """``v`` as Scaled: itself, or a dense batched value of ``out``'s type
    as its own root; else None."""
    if type(v) is Scaled:  # (broadcast only by size-1 axes: the same raveled order)
        return _reshaped(v, out) if v.aval.size == out.size else None
    if type(v) is tuple and v[1] is not None and out.dtype.kind == "f":
        x, dim = v
        aval = get_aval(x)
        if aval.dtype != out.dtype or aval.size != rows * out.size or aval.shape[dim] != rows:
            return None
        return Scaled(v, None, out)
    return None


def _scaled_by(s: Scaled, prim, u, out: ShapedArray, u_first: bool = False) -> Scaled:
    def scale(x):
        return bind(prim, u, x) if u_first else bind(prim, x, u)

    if s.factor is None and prim.name == "mul" and get_aval(u).shape == out.shape:
        factor = u
    else:
        factor = scale(_factor(s))
    masked = None if s.mask is None else scale(s.masked)
    return s.with_(factor, out, s.mask, masked)


def _mul_rule(e, ins, rows):
    """``mul`` by an unbatched value (either side) and ``div`` by one: the
    factor and the masked values take the scaling.  A dense batched value
    starts a Scaled here."""
    out = e.outputs[0].aval
    a, b = ins
    if _scaling(b, out) and (s := _as_scaled(a, out, rows)) is not None:
        return _scaled_by(s, e.primitive, b[0], out)
    if e.primitive.name == "mul" and _scaling(a, out) and \
            (s := _as_scaled(b, out, rows)) is not None:
        return _scaled_by(s, e.primitive, a[0], out, u_first=True)
    return None


def _neg_rule(e, ins, rows):
    a = _as_scaled(ins[0], e.outputs[0].aval, rows)
    if a is None:
        return None
    masked = None if a.mask is None else bind(e.primitive, a.masked)
    return a.with_(bind(e.primitive, _factor(a)), None, a.mask, masked)


def _add_rule(e, ins, rows):
    """``add``/``sub`` of two Scaled of one root and one mask: the factors
    (and the masked values) add."""
    a, b = ins
    if type(a) is not Scaled or type(b) is not Scaled or a.root is not b.root \
            or _mask_key(a) != _mask_key(b) or a.aval.shape != b.aval.shape:
        return None
    masked = None if a.mask is None else bind(e.primitive, a.masked, b.masked)
    return a.with_(bind(e.primitive, _factor(a), _factor(b)), None, a.mask, masked)


def _select_rule(e, ins, rows):
    """``select`` by an unbatched mask between a Scaled (or dense batched)
    value and an unbatched one: the entries taking the unbatched value join
    the mask."""
    out = e.outputs[0].aval
    pred, *cases = ins
    if len(cases) != 2 or not _unbatched(pred) or get_aval(pred[0]).size != out.size:
        return None
    made = pred[0]
    if get_aval(made).shape != out.shape:  # broadcast by size-1 axes only
        pred = (bind(_prim("reshape"), made, new_sizes=out.shape), None)
    for i in (0, 1):
        s, other = _as_scaled(cases[i], out, rows), cases[1 - i]
        if s is None or not _scaling(other, out):
            continue
        # select(pred, on_true, on_false): ``other`` is picked where pred holds
        # for i == 1, where it does not for i == 0.
        old = np.zeros(out.shape, out.dtype) if s.mask is None else s.masked
        picked = [old, other[0]] if i == 0 else [other[0], old]
        masked = bind(e.primitive, pred[0], *picked)
        return s.with_(s.factor, out, (s.mask or ()) + ((made, i == 0),), masked)
    return None

def _order_rule(e, ins, rows, ordered):
    """An op keeping every element in raveled order: the same root, read in
    the new shape; the factor, mask and masked values go through the op."""
    a = ins[0]
    out = e.outputs[0].aval
    if type(a) is not Scaled or a.aval.size != out.size or not ordered(e, a.aval):
        return None
    return _reshaped(a, out)


def _reshaped(a: Scaled, out: ShapedArray) -> Scaled:
    """``a`` read in ``out``'s shape (of as many elements)."""
    if a.aval.shape == out.shape:
        return a

    def shaped(x):
        return None if x is None else bind(_prim("reshape"), x, new_sizes=out.shape)

    # The mask is kept as made (of the same size and raveled order), so that
    # two values masked by one select still add (``_add_rule`` compares masks).
    return a.with_(shaped(a.factor), out, a.mask, shaped(a.masked))


def _mask(s: Scaled):
    """The mask in ``s``'s per-row shape: where any of its selects picked
    the unbatched value."""
    mask = None
    for pred, negated in s.mask:  # type: ignore[union-attr]
        if get_aval(pred).shape != s.aval.shape:
            pred = bind(_prim("reshape"), pred, new_sizes=s.aval.shape)
        if negated:
            pred = bind(_prim("not"), pred)
        mask = pred if mask is None else bind(_prim("or"), mask, pred)
    return mask


def _mask_key(s: Scaled) -> frozenset:
    return frozenset((id(pred), negated) for pred, negated in s.mask or ())


def _dot_general_rule(e, ins, rows):
    """``dot_general`` of a Scaled and an unbatched operand, without batch
    dimensions, contracting every axis of more than one element of the
    Scaled value: the factor scales the unbatched operand's contracted
    axes instead, and the root is contracted with it; masked entries are
    zeroed in both and contracted on their own."""
    (contract, batch) = e.params["dimension_numbers"]
    if any(batch):
        return None
    for side in (0, 1):
        s, other = ins[side], ins[1 - side]
        if type(s) is not Scaled or not _unbatched(other):
            continue
        mine, theirs = contract[side], contract[1 - side]
        if any(n != 1 for i, n in enumerate(s.aval.shape) if i not in mine):
            return None
        operand = target = other[0]
        aval = get_aval(operand)
        if aval.dtype != s.aval.dtype:
            return None
        factor = s.factor
        if s.mask is not None:  # masked entries are contracted on their own, below
            mask = _mask(s)
            factor = bind(_prim("select"), mask, np.zeros((), aval.dtype), _factor(s))
        if factor is not None:
            operand = bind(_prim("mul"), operand, _spread(s, factor, mine, theirs, aval))
        root, at = _root(s, rows)
        if s.mask is not None:  # in the root's layout: one pass in memory order
            shape = get_aval(root).shape
            root = _zero_where(bind(_prim("reshape"), mask, new_sizes=(
                shape[:at] + (1,) + shape[at + 1:])), root)
        pair = [root, operand] if side == 0 else [operand, root]
        out, dim = e.primitive.rule("batch")(pair, [at, None] if side == 0 else [None, at],
                                             axis_size=rows, **e.params)
        if s.mask is None:
            return (out, dim)
        alone = bind(_prim("select"), mask, s.masked, np.zeros(s.aval.shape, s.aval.dtype))
        rest = bind(e.primitive, *([alone, target] if side == 0 else [target, alone]),
                    **e.params)
        total, dim = _prim("add").rule("batch")([out, rest], [dim, None], axis_size=rows)
        return (total, dim)
    return None


def _zero_where(mask, x):
    """``select(mask, 0, x)``, run only where ``mask`` is set somewhere (a
    ``cond`` on ``any(mask)``): over the dense root the select is a pass as
    dear as the products around it, and the masks that reach it (logaddexp's
    guard against a NaN argument, set where a row of the data is not
    finite) are set nowhere on most data.  The same bits either way: where
    nothing is masked the select gives ``x``."""
    m_aval, x_aval = get_aval(mask), get_aval(x)
    zero = np.zeros((), x_aval.dtype)

    def kept(m, r):
        return [r]

    def zeroed(m, r):
        return [bind(_prim("select"), m, zero, r)]

    branches = tuple(trace_to_jaxpr(fn, [m_aval, x_aval], "zero_where")[0]
                     for fn in (kept, zeroed))
    anywhere = bind(_prim("reduce_or"), mask, axes=tuple(range(m_aval.ndim)))
    return bind(_prim("cond"), anywhere, mask, x, branches=branches)[0]


def _spread(s: Scaled, x, mine, theirs, target: ShapedArray):
    """``x`` (of ``s``'s per-row shape) laid along ``target``'s contracted
    axes ``theirs`` (the pairs of ``mine``), of size 1 on its other axes."""
    # Axes of x in the order of the target's axes they pair with.
    order = [m for _, m in sorted(zip(theirs, mine))]
    kept = [i for i in range(s.aval.ndim) if i in mine]
    if order != kept:
        x = bind(_prim("transpose"), x, permutation=tuple(order) + tuple(
            i for i in range(s.aval.ndim) if i not in mine))
    # Size-1 axes elsewhere: the product broadcasts it (no target-sized copy).
    return bind(_prim("reshape"), x, new_sizes=tuple(
        n if a in theirs else 1 for a, n in enumerate(target.shape)))


def _root(s: Scaled, rows: int) -> tuple[Any, int]:
    """The root with ``s``'s per-row shape, and its batch axis: where that
    shape only adds or drops size-1 axes, a reshape keeping the batch axis
    among the same elements (a view); else with the batch axis moved first."""
    x, dim = s.root
    shape = get_aval(x).shape
    per_row = shape[:dim] + shape[dim + 1:]
    if per_row == s.aval.shape:
        return x, dim
    wide = [n for n in per_row if n != 1]
    if wide == [n for n in s.aval.shape if n != 1]:
        before = sum(n != 1 for n in shape[:dim])  # wide axes ahead of the batch axis
        at = 0
        while before:
            before -= s.aval.shape[at] != 1
            at += 1
        new = s.aval.shape[:at] + (rows,) + s.aval.shape[at:]
        return bind(_prim("reshape"), x, new_sizes=new), at
    if dim != 0:
        x = bind(_prim("transpose"), x, permutation=(dim,) + tuple(
            i for i in range(len(shape)) if i != dim))
    return bind(_prim("reshape"), x, new_sizes=(rows,) + s.aval.shape), 0


def dense(s: Scaled, rows: int) -> tuple[Any, int]:
    """``s`` written out as the batched program computes it: the equations
    that made it replayed by their batching rules on their operands (written
    out in turn), once; so a value that meets no contraction comes out bit
    for bit as without this module, at the batched program's cost."""
    if s.written is None:
        e, ins = s.made_by  # type: ignore[misc]
        vals = [dense(v, rows) if type(v) is Scaled else v for v in ins]
        out, dim = e.primitive.rule("batch")([x for x, _ in vals], [d for _, d in vals],
                                             axis_size=rows, **e.params)
        s.written = (out, dim)
    return s.written


_RULES = {
    "mul": _mul_rule,
    "div": _mul_rule,
    "neg": _neg_rule,
    "add": _add_rule,
    "sub": _add_rule,
    "select": _select_rule,
    "dot_general": _dot_general_rule,
}
_ORDER = ("reshape", "squeeze", "expand_dims", "broadcast_in_dim", "transpose", "reduce_sum")


def push(e, ins: list, rows: int, ordered) -> list | None:
    """The outputs of ``e`` where a scaled rule applies to ``ins`` (values
    of ``structured_eval``); None where none does.  ``ordered(e, aval)``
    says whether a shape op keeps the raveled order."""
    if e.primitive.multiple_results or e.outputs[0].aval.dtype.kind != "f":
        return None
    name = e.primitive.name
    if name in _ORDER:
        done = _order_rule(e, ins, rows, ordered)
    elif name in _RULES:
        done = _RULES[name](e, ins, rows)
    else:
        return None
    if type(done) is not Scaled:
        return None if done is None else [done]
    made = Scaled(done.root, done.factor, done.aval, done.mask, done.masked)
    made.made_by = (e, ins)
    return [made]

