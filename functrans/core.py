"""The IR and tracing: avals, Var, Literal, Eqn, Jaxpr, tracers, traces, bind.

Everything in functrans is built from this module (see DESIGN.md, "Layers").

* The IR is four small immutable records (``Var``, ``Literal``, ``Eqn``,
  ``Jaxpr``) plus ``ClosedJaxpr``, which pairs a Jaxpr with the values of its
  constants.  ``str(jaxpr)`` prints it, ``check_jaxpr`` type-checks it,
  ``jaxpr.to_dot()`` draws it, and Jaxprs compare and hash structurally so
  that transforms and ``jit`` can cache on them.
* ``Primitive`` is a name plus rules; primitives are declared in
  ``functrans.primitives``, each once with all of its rules.
* ``bind`` is the single entry point of every operation: with no tracer among
  the operands it runs the primitive's NumPy impl at once; otherwise it
  records an equation into the innermost active trace and returns tracers.

There is one kind of trace, a Jaxpr builder.  Transforms are interpreters that
walk a Jaxpr and bind again under a fresh builder (``eval_jaxpr``), so every
transform yields a Jaxpr and composition is function composition.  A tracer
of an outer trace used inside an inner one becomes an input (a constvar) of
the inner Jaxpr: this closure conversion is what keeps nested transforms free
of perturbation confusion.
"""

from __future__ import annotations

import functools
import gc
import importlib
import itertools
import linecache
import math
import os
import struct
import sys
import threading
import types
import typing
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from functrans import array_types, dtypes
from functrans.errors import (
    ConcretizationError,
    FunctransError,
    JaxprTypeError,
    LeakedTracerError,
    MissingRuleError,
    TracerConversionError,
    UnknownPrimitiveError,
)

# --------------------------------------------------------------------------
# Abstract values
# --------------------------------------------------------------------------


class ShapedArray:
    """The abstract value (aval) of an array: its shape and dtype.

    ``weak_type`` marks a value that came from a Python scalar; under NumPy 2
    promotion it yields to the dtype of any array it meets.
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: tuple[int, ...], dtype: Any, weak_type: bool = False):
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))  # np.prod's dispatch cost more than the product

    def strip_weak(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def update(self, shape=None, dtype=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape, self.dtype if dtype is None else dtype
        )

    def str_short(self) -> str:
        """``f64[3,4]``: the form used in printed Jaxprs and error messages."""
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        return f"ShapedArray({self.str_short()}{', weak' if self.weak_type else ''})"


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array argument (for tracing and AOT)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence[int], dtype: Any):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


_PYTHON_SCALARS = (bool, int, float, complex)

#: The aval of each Python scalar type, one object each: a literal's aval is
#: then the very object a cached key holds, found without calling
#: ``ShapedArray.__eq__`` (avals are never changed once made).
_SCALAR_AVALS = {t: ShapedArray((), d, weak_type=t is not bool)
                 for t, d in dtypes.PYTHON_SCALAR_DTYPES.items()}


def get_aval(x: Any) -> ShapedArray:
    """The aval of a concrete value or a tracer.

    Python scalars are weak; NumPy arrays and NumPy scalars are not.  Other
    array-likes (lists, CuPy arrays) go through their ``shape``/``dtype`` or
    through ``np.asarray``.
    """
    t = type(x)
    if t is Tracer:
        return x.aval
    if t is np.ndarray:
        return ShapedArray(x.shape, x.dtype)
    aval = _SCALAR_AVALS.get(t)
    if aval is not None:
        return aval
    if isinstance(x, (np.ndarray, np.generic, ShapeDtypeStruct)):
        return ShapedArray(x.shape, x.dtype)
    for base in _PYTHON_SCALARS:  # subclasses such as IntEnum
        if isinstance(x, base):
            return get_aval(base(x))  # type: ignore[arg-type]  # x is a base instance
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__array__"):
        return ShapedArray(tuple(x.shape), x.dtype)
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"{type(x).__name__} is not a valid array value: {x!r:.80}")
    return ShapedArray(arr.shape, arr.dtype)


class Zero:
    """A symbolic zero tangent or cotangent of type ``aval``.

    Rules receive and return ``Zero`` instead of arrays of zeros, so that an
    input without a tangent costs nothing; ``instantiate`` makes a real array
    only where one is needed.
    """

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Marks a linear input of a transpose rule: its value is unknown, only its
    aval; the rule returns the cotangent for it."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def instantiate(x: Any) -> Any:
    """``x``, or a (broadcast, read-only) array of zeros when ``x`` is a Zero."""
    if type(x) is Zero:
        return np.broadcast_to(np.zeros((), x.aval.dtype), x.aval.shape)
    return x


# --------------------------------------------------------------------------
# The IR
# --------------------------------------------------------------------------


class Var:
    """A variable of a Jaxpr: an aval and an identity (names are given when printing)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in an equation."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val!r})"

    def key(self):
        # Compare by bit pattern, not by ``==``: ``-0.0`` and ``0.0`` are different
        # programs, and a ``nan`` literal must equal (and hash like) itself.  The
        # aval enters as its parts, which hash and compare in C.
        a, val = self.aval, self.val
        if type(val) is float:  # the common literal: its bytes without an array
            return (a.shape, a.dtype, a.weak_type, _F64, _DOUBLE.pack(val))
        val = np.asarray(val)
        return (a.shape, a.dtype, a.weak_type, val.dtype, val.tobytes())


Atom = "Var | Literal"
_F64 = np.dtype(np.float64)
#: A Python float's bytes, as ``np.asarray(v).tobytes()`` gives them (native order).
_DOUBLE = struct.Struct("=d")


class Eqn:
    """``outputs = primitive[params](*inputs)``.  Params are hashable values.

    ``source`` is the user's line that made the equation (``Source``; the line
    of the equation a transform derived it from), for the errors of
    ``debug_nans`` and the warnings of generated code.  It is not part of the
    program: two Jaxprs differing only in sources are equal, except while
    ``debug_nans`` or ``debug_infs`` is on, when the caches keyed on programs
    must keep one per user line for the errors to name the right one."""

    __slots__ = ("primitive", "inputs", "outputs", "params", "source")

    def __init__(self, primitive: Primitive, inputs: tuple, outputs: tuple, params: dict,
                 source: Source | None = None):
        self.primitive = primitive
        self.inputs = inputs
        self.outputs = outputs
        self.params = params
        self.source = source

    def __repr__(self):
        return f"Eqn({self.primitive.name}, {len(self.inputs)} in, {len(self.outputs)} out)"


class Jaxpr:
    """A typed, straight-line program: constvars, invars, equations, outvars.

    Two Jaxprs are equal when they are the same program up to the renaming of
    their variables (and the identity of ``Primitive`` objects), so a Jaxpr
    can key a cache.
    """

    __slots__ = ("constvars", "invars", "outvars", "eqns", "_key", "_hash", "_lines",
                 "_effect")

    def __init__(self, constvars, invars, outvars, eqns):
        self.constvars = tuple(constvars)
        self.invars = tuple(invars)
        self.outvars = tuple(outvars)
        self.eqns = tuple(eqns)
        self._key = None
        self._hash = None
        self._lines = False  # whether _key holds the equations' sources
        self._effect: bool | None = None

    @property
    def has_effect(self) -> bool:
        """Whether an equation of this program (or of one of its sub-Jaxprs) has
        an effect (``Primitive.effect``)."""
        if self._effect is None:
            self._effect = any(has_effect(e) for e in self.eqns)
        return self._effect

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def _structure(self):
        """The program as one flat tuple: each group (binders, operands) is
        preceded by its length, variables are numbered in binding order and a
        literal is ``_LITERAL`` followed by its ``Literal.key()``, so equal
        tuples are equal programs.  One tuple, not a few per equation: a cached
        program of 10^5 equations keeps 10^5 fewer objects for the garbage
        collector to walk (a full collection over the nested form took 1.7 s
        after three sizes of a 12k-equation loop program).  While
        ``debug_nans`` or ``debug_infs`` is on the tuple holds each equation's
        source too; a key memoised in the other state is made again."""
        if self._key is None or self._lines is not _checking:
            self._lines = _checking
            self._hash = None
            # An aval enters as its shape, dtype and weakness: hashing and
            # comparing those is NumPy's and Python's C code, where the
            # ShapedArray itself would call its Python __hash__/__eq__.  The
            # loops are written out: this runs once per traced call.
            ids: dict[int, int] = {}
            key: list[Any] = []
            add, extend = key.append, key.extend
            for vs in (self.constvars, self.invars):
                add(len(vs))
                for v in vs:
                    ids[id(v)] = len(ids)
                    a = v.aval
                    extend((a.shape, a.dtype, a.weak_type))
            for e in self.eqns:
                add(e.primitive)
                add(len(e.inputs))
                for x in e.inputs:
                    if type(x) is Literal:
                        add(_LITERAL)
                        extend(x.key())
                    else:
                        add(ids[id(x)])
                add(len(e.outputs))
                for v in e.outputs:
                    ids[id(v)] = len(ids)
                    a = v.aval
                    extend((a.shape, a.dtype, a.weak_type))
                add(_params_key(e.params) if e.params else ())
                if _checking:  # a cached program must not name another's lines
                    add(e.source)
            add(len(self.outvars))
            for x in self.outvars:
                if type(x) is Literal:
                    add(_LITERAL)
                    extend(x.key())
                else:
                    add(ids[id(x)])
            self._key = tuple(key)
        return self._key

    def __eq__(self, other):
        return type(other) is Jaxpr and (self is other or self._structure() == other._structure())

    def __hash__(self):
        if self._hash is None or self._lines is not _checking:
            self._hash = hash(self._structure())
        return self._hash

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__

    def to_dot(self) -> str:
        return jaxpr_to_dot(self)

    def render(self, path: str, format: str | None = None) -> str:
        """``to_dot()`` drawn into ``path`` (see ``ClosedJaxpr.render``)."""
        return render_dot(self.to_dot(), path, format)


#: Marks a literal operand in ``Jaxpr._structure`` (variables are numbers there).
_LITERAL = "lit"


def _params_key(params: dict) -> tuple:
    return tuple(sorted(params.items()))


class ClosedJaxpr:
    """A Jaxpr together with the values of its constvars."""

    __slots__ = ("jaxpr", "consts", "_hash", "_lines")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self._hash: int | None = None
        self._lines: Any = None

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __eq__(self, other):
        # Consts compare by identity: two closed Jaxprs are interchangeable
        # only if they close over the very same arrays.
        return (
            type(other) is ClosedJaxpr
            and self.jaxpr == other.jaxpr
            and len(self.consts) == len(other.consts)
            and all(a is b for a, b in zip(self.consts, other.consts))
        )

    def __hash__(self):
        # Kept: a transform's program is looked up in a few caches a call, and
        # twice in each (found, then made the newest).  Made again when the
        # Jaxpr's own key changes (debug_nans/debug_infs switched).
        if self._hash is None or self._lines is not _checking:
            self._lines = _checking
            self._hash = hash((self.jaxpr, tuple(map(id, self.consts))))
        return self._hash

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def to_dot(self) -> str:
        """Graphviz DOT text of the program (see ``jaxpr_to_dot``)."""
        return jaxpr_to_dot(self.jaxpr)

    def render(self, path: str, format: str | None = None) -> str:
        """Draw the program into ``path`` (SVG, PNG or PDF, from its suffix or
        ``format``) with the optional ``graphviz`` package and Graphviz's
        ``dot`` program; returns ``path``."""
        return render_dot(self.to_dot(), path, format)

    def __call__(self, *args):
        return eval_jaxpr(self.jaxpr, self.consts, *args)


# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------


def _var_names():
    letters = "abcdefghijklmnopqrstuvwxyz"
    for n in itertools.count(1):
        for chars in itertools.product(letters, repeat=n):
            yield "".join(chars)


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.fresh = _var_names()

    def binder(self, v: Var) -> str:
        name = self.names[id(v)] = next(self.fresh)
        return f"{name}:{v.aval.str_short()}"

    def atom(self, a) -> str:
        if type(a) is Literal:
            return _pp_literal(a)
        return self.names.get(id(a), "?")


def _pp_literal(lit: Literal) -> str:
    val = np.asarray(lit.val).item()
    if lit.aval.weak_type or lit.aval.dtype in (np.float64, np.int64, np.bool_):
        return repr(val)
    return f"{val!r}:{dtypes.short_name(lit.aval.dtype)}"


def _pp_param(value, namer_indent: int) -> str:
    if isinstance(value, ClosedJaxpr):
        value = value.jaxpr
    if isinstance(value, Jaxpr):
        inner = pp_jaxpr(value).replace("\n", "\n" + " " * (namer_indent + 2))
        return inner
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, tuple) and any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
        return "(" + ", ".join(_pp_param(v, namer_indent) for v in value) + ")"
    return repr(value)


def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0) -> str:
    """``{ lambda a:f64[3] ; b:f64[3]. let c:f64[3] = sin b in (c,) }``, one
    equation per line."""
    n = _Namer()
    consts = " ".join(n.binder(v) for v in jaxpr.constvars)
    args = " ".join(n.binder(v) for v in jaxpr.invars)
    pad = " " * (indent + 4)
    lines = [f"{{ lambda {consts}{' ' if consts else ''}; {args}. let"]
    for e in jaxpr.eqns:
        ins = " ".join(n.atom(a) for a in e.inputs)
        outs = " ".join(n.binder(v) for v in e.outputs) or "_"
        params = ""
        if e.params:
            params = "[" + " ".join(
                f"{k}={_pp_param(v, indent + 4)}" for k, v in sorted(e.params.items())
            ) + "]"
        lines.append(f"{pad}{outs} = {e.primitive.name}{params} {ins}".rstrip())
    outs = ", ".join(n.atom(a) for a in jaxpr.outvars)
    lines.append(f"{' ' * (indent + 2)}in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}")
    return "\n".join(lines)


def jaxpr_to_dot(jaxpr: Jaxpr) -> str:
    """Graphviz DOT text of ``jaxpr``: a box per equation labelled with its
    primitive, its params and its results; the inputs as ellipses, the
    constants as grey notes, literal operands as plain text, the outputs as
    dashed ellipses; the programs of control flow (scan, while and cond
    bodies, branches) as clusters named after the equation and its param,
    beside the equation and joined to it by a dashed edge."""
    return "\n".join(_Dot().graph(jaxpr))


def _dot_text(text: str, limit: int = 60) -> str:
    """``text`` shortened to ``limit`` characters and escaped for a DOT label."""
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_dot(dot: str, path: str, format: str | None = None) -> str:
    """Write the DOT text ``dot`` drawn as ``format`` (default: ``path``'s
    suffix) into ``path`` with the ``graphviz`` package."""
    fmt = (format or os.path.splitext(str(path))[1].lstrip(".") or "svg").lower()
    try:
        import graphviz  # optional: the graphviz extra
    except ImportError:
        raise ImportError(
            f"render({str(path)!r}) draws with the graphviz package, which is not installed: "
            "pip install 'functrans[graphviz]' (it needs Graphviz's dot program too, e.g. "
            "apt-get install graphviz); to_dot() gives the DOT text without either"
        ) from None
    try:
        data = graphviz.Source(dot).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(
            f"render({str(path)!r}): the graphviz package is installed but Graphviz's dot "
            "program is not on PATH; install Graphviz (apt-get install graphviz, brew install "
            "graphviz, conda install graphviz) or draw to_dot()'s text elsewhere"
        ) from None
    except ValueError as e:  # an unknown format
        raise ValueError(f"render({str(path)!r}): {e}; use svg, png or pdf") from None
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


class _Dot:
    """Builds the DOT text.  Nodes are named ``const_a``, ``in_b``, ``eqn0``,
    ``lit0_1``, ``out0`` after the program's own names, prefixed ``s1_`` ...
    inside the cluster of a sub-program."""

    def __init__(self):
        self.clusters = itertools.count(1)
        self.lines: list[str] = []

    def node(self, name: str, label: str, indent: str, attrs: str) -> str:
        self.lines.append(f'{indent}{name} [label="{label}", {attrs}];')
        return name

    def graph(self, jaxpr: Jaxpr) -> list[str]:
        self.lines = ["digraph jaxpr {", "  rankdir=TB;", "  compound=true;",
                      '  node [fontname="monospace", fontsize=10];']
        self.body(jaxpr, "", "  ")
        self.lines.append("}")
        return self.lines

    def body(self, jaxpr: Jaxpr, prefix: str, indent: str) -> str:
        """Draw ``jaxpr``'s nodes; returns the name of its first node (where
        the edge into its cluster points)."""
        n = _Namer()
        src: dict[int, str] = {}
        first: list[str] = []
        for kind, vs in (("const", jaxpr.constvars), ("in", jaxpr.invars)):
            for v in vs:
                label = n.binder(v)
                attrs = ("shape=note, style=filled, fillcolor=lightgrey" if kind == "const"
                         else "shape=ellipse")
                src[id(v)] = self.node(f"{prefix}{kind}_{n.names[id(v)]}",
                                       _dot_text(label), indent, attrs)
                first.append(src[id(v)])
        for i, e in enumerate(jaxpr.eqns):
            params = " ".join(f"{k}={_pp_param(val, 0)}" for k, val in sorted(e.params.items())
                              if not _is_program(val))
            head = _dot_text(e.primitive.name + (f"[{params}]" if params else ""), 80)
            outs = _dot_text(", ".join(n.binder(v) for v in e.outputs) or "(no results)")
            node = self.node(f"{prefix}eqn{i}", f"{head}\\n{outs}", indent, "shape=box")
            first.append(node)
            for j, a in enumerate(e.inputs):
                if type(a) is Literal:
                    lit = self.node(f"{prefix}lit{i}_{j}", _dot_text(_pp_literal(a)), indent,
                                    "shape=plaintext")
                    self.lines.append(f"{indent}{lit} -> {node};")
                else:
                    self.lines.append(f"{indent}{src[id(a)]} -> {node};")
            for key, val in sorted(e.params.items()):
                subs = [v for v in (val if isinstance(val, tuple) else (val,))
                        if isinstance(v, (Jaxpr, ClosedJaxpr))]
                for j, sub in enumerate(subs):
                    where = key if len(subs) == 1 else f"{key}[{j}]"
                    self.cluster(node, f"{e.primitive.name}: {where}", sub, indent)
            for v in e.outputs:
                src[id(v)] = node
        for j, a in enumerate(jaxpr.outvars):
            out = self.node(f"{prefix}out{j}", f"out {j}", indent, "shape=ellipse, style=dashed")
            if type(a) is not Literal:
                self.lines.append(f"{indent}{src[id(a)]} -> {out};")
        return first[0] if first else out if jaxpr.outvars else \
            self.node(f"{prefix}empty", "(empty)", indent, "shape=plaintext")

    def cluster(self, owner: str, title: str, sub: Jaxpr | ClosedJaxpr, indent: str) -> None:
        k = next(self.clusters)
        self.lines.append(f"{indent}subgraph cluster_{k} {{")
        self.lines.append(f'{indent}  label="{_dot_text(title)}"; style=rounded; color=grey50; '
                          'fontname="monospace"; fontsize=10;')
        head = self.body(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub, f"s{k}_",
                         indent + "  ")
        self.lines.append(f"{indent}}}")
        self.lines.append(f"{indent}{owner} -> {head} [lhead=cluster_{k}, style=dashed, "
                          "arrowhead=odot];")


def _is_program(value: Any) -> bool:
    values = value if isinstance(value, tuple) else (value,)
    return any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in values)


# --------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------

class _Registry(dict):
    """A dict of the declared primitives by name that, before anything reads
    it, imports the primitive modules left to load on first use
    (``load_primitives_on_demand``): walking it (docs generators, rule
    coverage tests) or looking a name up never sees an incomplete set."""

    def _complete(self) -> None:
        # A module leaves the list once loaded, so other threads wait for it;
        # one that the loading thread reads it from meanwhile sees it as is.
        if _on_demand:
            with _on_demand_lock:
                while _on_demand:
                    module = _on_demand[-1]
                    if module in _on_demand_loading:
                        return
                    _on_demand_loading.add(module)
                    try:
                        importlib.import_module(module)
                    finally:
                        _on_demand_loading.discard(module)
                    _on_demand.remove(module)

    def __getitem__(self, name):
        self._complete()
        return dict.__getitem__(self, name)

    def __contains__(self, name):
        self._complete()
        return dict.__contains__(self, name)

    def __iter__(self):
        self._complete()
        return dict.__iter__(self)

    def __len__(self):
        self._complete()
        return dict.__len__(self)

    def __repr__(self):
        self._complete()
        return dict.__repr__(self)

    def get(self, name, default=None):
        self._complete()
        return dict.get(self, name, default)

    def keys(self):
        self._complete()
        return dict.keys(self)

    def values(self):
        self._complete()
        return dict.values(self)

    def items(self):
        self._complete()
        return dict.items(self)

    def copy(self):
        self._complete()
        return dict(self)


#: Modules (by name) whose primitives ``registry`` loads before it is read.
_on_demand: list[str] = []
_on_demand_loading: set[str] = set()
_on_demand_lock = threading.RLock()


def load_primitives_on_demand(*modules: str) -> None:
    """Declare that ``modules`` hold primitives which ``import functrans``
    leaves unloaded (their families cost import time most programs never
    use): the first read of ``registry`` imports them.  The primitives
    package calls this; core imports them by name, as it stands below them."""
    _on_demand.extend(modules)


#: Every declared primitive by name; tests walk it to check rule coverage.
registry: dict[str, Primitive] = _Registry()

#: The rule slots a primitive may fill, and the transform that needs each.
RULES = {
    "jvp": "jvp",
    "transpose": "transpose",
    "batch": "vmap",
    "cuda": "the GPU backend",
    "sparsity": "sparsity detection (functrans.sparse)",
}


class RuleFactory:
    """A rule made from its own primitive, for rule shapes many primitives
    share (a linear JVP, a zero JVP, an elementwise batching rule): given in
    the declaration (``jvp=linear_jvp``), called by ``Primitive`` with the new
    primitive, so no rule is attached after its declaration."""

    def __init__(self, make: Callable[[Primitive], Callable]):
        self.make = make
        self.__doc__ = make.__doc__


def zero_derivative(jvp: Callable) -> Callable:
    """Mark a JVP rule whose output tangents are always zero (``stop_gradient``,
    ``floor``, ``argmax``): values it makes carry no derivative, so converting
    them into constants loses nothing (``JaxprTrace.carries_derivative``)."""
    jvp.zero_derivative = True  # type: ignore[attr-defined]
    return jvp


def rule_factory(make: Callable[[Primitive], Callable]) -> RuleFactory:
    """Decorator: ``make(prim)`` returns ``prim``'s rule (see ``RuleFactory``)."""
    return RuleFactory(make)


class Primitive:
    """A named operation and its rules.

    ``abstract_eval(*avals, **params)`` returns the output aval (a list of
    them when ``multiple_results``); ``impl(*arrays, **params)`` computes
    with NumPy.  The other rules are optional slots, filled where the
    primitive is declared and looked up by transforms with ``rule``; a
    ``RuleFactory`` in a slot is called with the primitive to make the rule.
    ``doc`` is the one-line meaning shown in the IR reference (docs/ir.md).

    How the GPU backend runs a primitive is declared too, in one of three
    ways: an elementwise ``cuda`` rule (a generated kernel);
    ``xp_impl=True``, saying that ``impl`` is written against its operands'
    array module (``array_module(operands)``, NumPy or CuPy), or only binds
    primitives and evaluates sub-Jaxprs, so the same impl runs on device
    arrays (one without operands makes NumPy arrays, which the backend
    copies to the device); or ``gpu=fn``, the impl on device arrays, same
    signature, only where the GPU computation really differs (CUDA atomics,
    a function CuPy lacks or gives other semantics).
    """

    def __init__(
        self,
        name: str,
        *,
        abstract_eval: Callable,
        impl: Callable,
        multiple_results: bool = False,
        jvp: Callable | RuleFactory | None = None,
        transpose: Callable | RuleFactory | None = None,
        batch: Callable | RuleFactory | None = None,
        cuda: Any = None,
        simplify: Callable | RuleFactory | None = None,
        numpy_fn: Callable | None = None,
        numpy_kernel: Callable | RuleFactory | None = None,
        numexpr: str | Callable[..., str | None] | None = None,
        linear: bool = False,
        broadcasts: bool = False,
        doc: str | None = None,
        xp_impl: bool = False,
        gpu: Callable | None = None,
        sparsity: Callable | RuleFactory | None = None,
        effect: bool = False,
        moves_elements: bool = False,
        transposes_strong_zeros: bool = False,
    ):
        if dict.__contains__(registry, name):  # no on-demand load while declaring
            raise ValueError(f"primitive {name!r} is declared twice")
        self.name = name
        self.abstract_eval = abstract_eval
        self.impl = impl
        self.multiple_results = multiple_results
        self.jvp = jvp
        self.transpose = transpose
        self.batch = batch
        self.cuda = cuda
        #: Optional algebraic simplification (functrans.passes.simplify).
        self.simplify = simplify
        #: For param-less elementwise primitives: the NumPy function itself,
        #: which generated code may call directly (it may return NumPy scalars).
        self.numpy_fn = numpy_fn
        #: Optional: ``numpy_kernel(in_avals, **params)`` gives the function of
        #: the operands alone that generated code calls for one equation,
        #: chosen once for its params and operand types (or None: the impl).
        self.numpy_kernel = numpy_kernel
        #: For elementwise primitives: a numexpr expression template over the
        #: operands ``{0}``, ``{1}`` ... (params by name), or a function of the
        #: params giving one (None: not for those params), used to evaluate
        #: large fused groups on the CPU in one pass, where numexpr computes
        #: exactly NumPy's result (see functrans.primitives.fused).
        self.numexpr = numexpr
        #: True when the primitive is linear in (some of) its operands, so that
        #: it needs a transpose rule.
        self.linear = linear
        #: True for a primitive that only broadcasts its operand (a view in
        #: NumPy, an index computation in a kernel), with broadcast_in_dim's
        #: params (``shape``, ``broadcast_dimensions``): fusion takes it into
        #: the group that consumes it at no cost.
        self.broadcasts = broadcasts
        self.doc = doc
        if xp_impl and gpu is not None:
            raise ValueError(f"primitive {name!r}: give gpu= or xp_impl=True, not both")
        #: True when ``impl`` runs on any backend's arrays (see the class doc).
        self.xp_impl = xp_impl
        #: The impl on CuPy arrays where it differs from ``impl``, or None.
        self.gpu = gpu
        #: True for a primitive run for its effect (``debug_print``): its
        #: equations are kept although nothing reads their results, run once
        #: each time the program runs and in program order, never merged,
        #: folded at compile time nor run while tracing (``has_effect``).
        self.effect = effect
        #: Optional: which operand elements each output element depends on, and
        #: which operands meet nonlinearly (``functrans.interpreters.sparsity``);
        #: without it, sparsity detection takes every output element to depend
        #: on every operand element.
        self.sparsity = sparsity
        #: True for a linear primitive whose transpose puts each element of
        #: the output cotangent in at most one place of its linear operands'
        #: cotangents and zeros elsewhere (reshape, slice, concatenate ...),
        #: written with ops that take bool arrays too: the backward pass moves
        #: a strong-zero mask with it (``functrans.interpreters.transpose``).
        self.moves_elements = moves_elements
        #: True when the transpose rule takes ``StrongZeros`` records among its
        #: cotangents itself (custom_lin, which runs a user's rule on them).
        self.transposes_strong_zeros = transposes_strong_zeros
        for slot in ("jvp", "transpose", "batch", "simplify", "numpy_kernel", "sparsity"):
            rule = getattr(self, slot)
            if isinstance(rule, RuleFactory):
                setattr(self, slot, rule.make(self))
        registry[name] = self

    def bind(self, *args, **params):
        return bind(self, *args, **params)

    def rule(self, kind: str) -> Callable:
        """The ``kind`` rule (``"jvp"``, ``"transpose"``, ``"batch"``, ``"cuda"``),
        or a ``MissingRuleError`` naming the primitive and the transform."""
        r = getattr(self, kind)
        if r is None:
            raise MissingRuleError(
                f"primitive '{self.name}' has no {kind} rule, so {RULES[kind]} cannot "
                f"process it; add a {kind}= rule where '{self.name}' is declared"
            )
        return r

    def __repr__(self):
        return self.name


def _values_while_tracing(eqn: Eqn, ins: list) -> Any:
    """The results of ``eqn``, an equation with an effect, for value-carrying
    tracing: computed with prints muted (``effects_muted``), since the effect
    belongs to the run of the program, not to its tracing."""
    _state.muted += 1
    try:
        return apply_impl(eqn.primitive, ins, eqn.params)
    finally:
        _state.muted -= 1


def effects_muted() -> bool:
    """Whether this thread is computing values while tracing (a print's impl
    then prints nothing: the traced program prints when it runs)."""
    return _state.muted > 0


def has_effect(eqn: Eqn) -> bool:
    """Whether ``eqn`` must run although nothing reads its results: its
    primitive has an effect, or one of its sub-Jaxprs (a loop body, a branch)
    has one.  The passes keep, and never merge or fold, such equations."""
    if eqn.primitive.effect:
        return True
    return bool(eqn.params) and any(
        (sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub).has_effect
        for sub in _sub_jaxprs(eqn.params)
    )


def lookup_primitive(name: str) -> Primitive:
    try:
        return registry[name]
    except KeyError:
        raise UnknownPrimitiveError(
            f"unknown primitive {name!r}; known primitives: {', '.join(sorted(registry))}"
        ) from None


# --------------------------------------------------------------------------
# Tracers and traces
# --------------------------------------------------------------------------


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


class _TraceState(threading.local):
    """The trace stack of one thread: transforms running in other threads at
    the same time never see each other's traces."""

    def __init__(self):
        self.stack: list[JaxprTrace] = []
        #: The source of the equation an interpreter is re-emitting: the
        #: equations it binds take it as theirs (see ``user_source``).
        self.source: Source | None = None
        #: Above 0 while values are computed during tracing (``effects_muted``).
        self.muted = 0


_state = _TraceState()


def _is_library_frame(frame: types.FrameType) -> bool:
    module = frame.f_globals.get("__name__", "")
    return module == "functrans" or module.startswith(("functrans.", "importlib"))


def user_frame_summary() -> str:
    """``file.py:12`` of the innermost stack frame outside functrans, for errors."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _is_library_frame(frame):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


#: ``(code, offset, derived)``: where the user's code made an equation, as the
#: code object running there and the offset of its instruction (a plain
#: tuple, made on every recorded equation: reading ``frame.f_lineno`` or
#: making an object there cost about as much as recording the equation);
#: ``source_location`` gives its file, line and function.  ``derived``: a
#: transform made the equation from that line's operation (a derivative
#: rule's equations, a transposed equation).
Source = tuple[types.CodeType, int, bool]


def source_location(source: Source) -> tuple[str, int, str]:
    """``(file, line, function)`` of ``source``."""
    code, offset, _ = source
    for start, stop, line in code.co_lines():
        if start <= offset < stop and line is not None:
            return code.co_filename, line, code.co_name
    return code.co_filename, code.co_firstlineno, code.co_name


#: Whether each code object met on the stack is functrans' own (``user_source``
#: skips those frames); bounded, since generated code makes new code objects.
_library_code: dict[types.CodeType, bool] = {}


def user_source(depth: int = 2) -> Source | None:
    """Where the equation being recorded comes from: the source of the
    equation an interpreter is re-emitting, else the innermost stack frame
    outside functrans (``depth`` frames above this call and out)."""
    source = _state.source
    if source is not None:
        return source
    frame: types.FrameType | None = sys._getframe(depth)
    known = _library_code
    while frame is not None:
        code = frame.f_code
        library = known.get(code)
        if library is None:
            if len(known) > 4096:
                known.clear()
            library = known[code] = _is_library_frame(frame)
        if not library:
            return (code, frame.f_lasti, False)
        frame = frame.f_back
    return None


def current_source() -> Source | None:
    """The source an interpreter gave the equations it binds (None: their own line)."""
    return _state.source


def set_source(source: Source | None) -> None:
    """Give ``source`` to the equations bound from now on in this thread: an
    interpreter re-emitting an equation passes on the user's line (and
    restores ``current_source()`` when it is done)."""
    _state.source = source


def derived_source(source: Source | None) -> Source | None:
    """``source`` marked as made by a transform from that line's operation."""
    return source if source is None or source[2] else (source[0], source[1], True)


def format_source(source: Source | None) -> str:
    """``loss (model.py:12: y = fnp.log(x))``, for messages."""
    if source is None:
        return "an unknown line"
    file, line, function = source_location(source)
    text = linecache.getline(file, line).strip()
    where = f"{function} ({file}:{line}{': ' + text if text else ''})"
    return f"an operation a transform derived from {where}" if source[2] else where


class JaxprTrace:
    """Builds a Jaxpr from the binds made while a Python function runs.

    ``fun_name`` names the user's function in errors.  With ``concrete=True``
    every tracer also carries its value (computed eagerly from its inputs'
    values), so ``bool()``/``int()`` on it work; a Jaxpr built that way is
    specialised to those values and ``concretized`` says whether it was.
    ``differentiated``: the trace's inputs carry derivatives (the trace of a
    ``grad``, ``jvp``, ``vjp`` ...), so converting a value that depends on them
    into a constant is refused.  ``in_jit``: the trace is jit's, whose inputs
    never have values.
    """

    def __init__(self, fun_name: str, concrete: bool = False, reason: str = "",
                 differentiated: bool = False, in_jit: bool = False):
        self.fun_name = fun_name
        self.concrete = concrete
        self.concretized = False
        self.reason = reason or (" inside jit" if in_jit else "")
        self.differentiated = differentiated
        self.in_jit = in_jit
        self.level = len(_state.stack)
        self.active = False
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.constvals: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        self._keepalive: list[Any] = []
        #: Inputs and constants standing for tracers of enclosing traces, by id of their Var.
        self._outer: dict[int, Tracer] = {}
        #: The equation making each Var (by id), for ``carries_derivative``; built
        #: on the first conversion, so recording itself keeps no extra map.
        self._producers: dict[int, Eqn] = {}
        self._producers_upto = 0
        #: Whether ``constant`` made a tracer here (only then can values be
        #: known in a trace without values).
        self.has_constants = False

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

    def new_arg(self, aval: ShapedArray, val: Any = None, outer: Tracer | None = None) -> Tracer:
        """A tracer for a new input; ``outer``: the enclosing trace's tracer
        it stands for, if any (its derivative flows through this input)."""
        var = Var(aval)
        self.invars.append(var)
        if outer is not None:
            self._outer[id(var)] = outer
        return Tracer(self, var, val if self.concrete else None)

    def constant(self, x: np.ndarray) -> Tracer:
        """A tracer of this trace for the constant array ``x``: an array made
        inside traced code that must be traced too (the array API's
        ``asarray(v, device=tracer.device)``).  It carries ``x`` as its value
        even under ``jit``: a constant's value is known and never changes."""
        self.has_constants = True
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
            if lifted:
                self._outer[id(var)] = x
            self._keepalive.append(x)  # ids stay valid while the trace lives
            self.constvars.append(var)
            self.constvals.append(x)
        return var

    def _value_of(self, x, atom):
        if isinstance(x, Tracer):
            return x.val
        return atom.val if type(atom) is Literal else x

    # -- recording ---------------------------------------------------------

    def process(self, prim: Primitive, args: Sequence[Any], params: dict):
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
        try:
            out = _abstract_eval(prim, avals, params)
        except FunctransError as e:
            raise type(e)(f"{self.fun_name}: {e}") from None
        outvars = tuple([Var(a) for a in out]) if prim.multiple_results else (Var(out),)
        eqn = Eqn(prim, tuple(invars), outvars, params, user_source(3))
        self.eqns.append(eqn)
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

    def _only_constants(self, args: Sequence[Any]) -> bool:
        """Whether every traced operand is a value-carrying tracer of this trace
        (in a trace without values: a ``constant`` or a result of constants
        only), so the result's value is known too.  A tracer of an enclosing
        trace does not count: its value would specialise a Jaxpr that jit caches."""
        return all(type(x) is not Tracer or (x._trace is self and x.val is not None)
                   for x in args)

    def to_jaxpr(self, outs: Sequence[Any]) -> ClosedJaxpr:
        outvars = [self._input_var(x) for x in outs]
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns)
        return ClosedJaxpr(jaxpr, self.constvals)

    # -- derivatives of values ------------------------------------------------

    def carries_derivative(self, var: Var) -> bool:
        """Whether ``var`` depends on a differentiated input of this trace, or on
        a tracer of an enclosing trace that carries a derivative, through
        float or complex values (integers carry none) and not through a
        primitive whose JVP is marked ``zero_derivative``.  Walks the equations
        back from ``var``: only conversions ask, so recording stays free of
        bookkeeping."""
        producers = self._producers
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


#: What to do instead of each conversion of a traced value into a constant.
_CONVERSION_ADVICE = {
    "np.asarray()": (
        "Use functrans.numpy.asarray(x), which keeps the value traced, or drop the "
        "conversion; a library function that calls np.asarray on its argument (as many "
        "SciPy functions do) cannot be traced: write it with functrans.numpy or use "
        "functrans.scipy. Writing a traced value into a NumPy array (buf[i] = x) ends up "
        "here too: build the array with functrans.numpy.at(buf)[i].set(x) or "
        "x.at[i].set(v) instead, and so does a NumPy array indexed by a traced integer "
        "(table[i]): index it with functrans.numpy.take(array, index, axis=0). So does a "
        "scalar type called on a traced value, np.float32(x) (functrans.numpy.float32 is "
        "NumPy's own): cast with x.astype(functrans.numpy.float32) or "
        "functrans.numpy.asarray(x, dtype=...), which keep the value traced."
    ),
    "float()": (
        "Keep it an array: drop the float() (0-d arrays work in arithmetic), and use "
        "functrans.numpy functions instead of math.* (functrans.numpy.exp(x), not "
        "math.exp(x)); to use the value without its derivative, convert "
        "functrans.lax.stop_gradient(x). Writing a traced value into an element of a "
        "NumPy array (buf[i] = x) ends up here too: build the array with "
        "functrans.numpy.at(buf)[i].set(x) instead."
    ),
    "item()": (
        "Keep it an array: index it (x[i]) instead of taking .item(); to use the value "
        "without its derivative, call functrans.lax.stop_gradient(x).item()."
    ),
    "tolist()": (
        "Keep it an array: iterate over it or index it instead of .tolist(); to use the "
        "values without their derivative, call functrans.lax.stop_gradient(x).tolist()."
    ),
    **dict.fromkeys(("int()", "math.floor()", "math.ceil()", "math.trunc()"), (
        "Keep an integer computed from traced data traced: x[functrans.numpy.floor(v)"
        ".astype(int)] and functrans.numpy.take(x, i) index with a traced integer; for a "
        "trip count use functrans.lax.fori_loop / while_loop, for a branch "
        "functrans.lax.cond / functrans.numpy.where."
    )),
    "complex()": (
        "Keep it an array: drop the complex() (0-d arrays work in arithmetic), and use "
        "functrans.numpy functions instead of cmath.*; to use the value without its "
        "derivative, convert functrans.lax.stop_gradient(x)."
    ),
}


#: Output avals of param-less equations by (primitive, *operand avals): most
#: equations of a long program repeat a few (the elementwise ones of a loop
#: body), and one lookup costs less than the shape and dtype rules (which
#: took 70% of recording an elementwise equation).  Equations with params
#: are not memoised: params equal under ``==`` (``2`` and ``2.0``) may give
#: different avals.  Bounded: cleared when full.
_avals_out: dict[tuple, Any] = {}


def _abstract_eval(prim: Primitive, avals: list[ShapedArray], params: dict):
    """``prim.abstract_eval(*avals, **params)``, memoised where ``params`` is empty."""
    if params:
        return prim.abstract_eval(*avals, **params)
    key = (prim, *avals)
    out = _avals_out.get(key)
    if out is None:
        out = prim.abstract_eval(*avals)
        if prim.multiple_results:
            out = tuple(out)
        if len(_avals_out) >= 4096:
            _avals_out.clear()
        _avals_out[key] = out
    return out


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
    if _checking:
        check_values(prim, out if prim.multiple_results else (out,), user_source())
    return out


# --------------------------------------------------------------------------
# debug_nans and debug_infs
# --------------------------------------------------------------------------

#: ``(debug_nans, debug_infs)``, set through ``functrans.config``: the
#: floating-point results of every primitive are checked, eagerly in ``bind``
#: and by generated code (which has the checks only while they are on).
value_checks: tuple[bool, bool] = (False, False)
_checking = False

#: Functions called when ``value_checks`` changes: the caches of generated
#: code drop their programs, which were generated with or without checks.
on_value_checks: list[Callable[[], None]] = []


def set_value_checks(nans: bool, infs: bool) -> None:
    global value_checks, _checking
    value_checks = (bool(nans), bool(infs))
    _checking = value_checks != (False, False)
    for clear in on_value_checks:
        clear()


def check_values(prim: Primitive, outs: Sequence[Any], source: Source | None) -> None:
    """Raise ``FloatingPointError`` if a result of ``prim`` (made at ``source``)
    holds a NaN (``debug_nans``) or an infinity (``debug_infs``)."""
    nans, infs = value_checks
    for x in outs:
        if isinstance(x, (float, complex)):
            x = np.asarray(x)
        dtype = getattr(x, "dtype", None)
        if dtype is None or dtype.kind not in "fc":
            continue
        xp = array_module((x,))
        for on, test, what, flag in ((nans, xp.isnan, "NaN", "debug_nans"),
                                     (infs, xp.isinf, "an infinity", "debug_infs")):
            bad = int(test(x).sum()) if on else 0
            if bad:
                aval = ShapedArray(tuple(x.shape), dtype)
                raise FloatingPointError(
                    f"{flag}: the primitive '{prim.name}' produced {what} ({bad} of "
                    f"{aval.size} elements of its {aval.str_short()} result) in "
                    f"{format_source(source)}. Check the operands there (a value outside "
                    f"the function's domain, a division by zero, an overflow); "
                    f"functrans.config.update('{flag}', False) turns the check off"
                )


# --------------------------------------------------------------------------
# Backends of concrete arrays
# --------------------------------------------------------------------------

#: The backend of each array type other than ``numpy.ndarray`` (None: a value
#: NumPy handles, such as a Python scalar).  A backend has ``name``,
#: ``array_module()``, ``apply(prim, args, params)`` (one primitive, eagerly)
#: and ``run(closed, args)`` (a whole Jaxpr); ``functrans.backends.cupy``
#: registers ``cupy.ndarray`` when a CuPy array is first seen.
device_backends: dict[type, Any] = {}

#: The backend of NumPy arrays and Python scalars, set by
#: ``functrans.backends.numpy`` when it is imported (with ``functrans``).
host_backend: Any = None

#: Loaders of the backends of array types from other libraries, by the
#: library's top-level module name (``"cupy"``): called on first sight of such
#: an array, so that importing functrans never imports CuPy.  Filled in by
#: ``functrans.backends``.
lazy_backends: dict[str, Callable[[], None]] = {}


def backend_of_type(t: type) -> Any:
    """The backend of arrays of type ``t``, or None for NumPy's."""
    try:
        return device_backends[t]
    except KeyError:
        pass
    load = lazy_backends.get(getattr(t, "__module__", "").partition(".")[0])
    if load is not None:
        load()  # registers its array types
    return device_backends.setdefault(t, None)


def run_jaxpr(closed: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    """Evaluate ``closed`` on ``args``: by binding its equations into the
    current trace when an input or constant is traced (a transform nested in
    another), otherwise with the compiled code of the inputs' backend (NumPy's,
    or the GPU's when one of them is a device array)."""
    backend = None
    for x in itertools.chain(closed.consts, args):
        t = type(x)
        if t is np.ndarray:
            continue
        if isinstance(x, Tracer):
            return eval_jaxpr(closed.jaxpr, closed.consts, *args)
        backend = backend or backend_of_type(t)
    if _state.stack and closed.jaxpr.has_effect:
        # Under a trace, an equation with an effect may have to be recorded
        # rather than run (a collective over the axis of a vmap being traced):
        # bind each one, as a traced input would.
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return (backend or host_backend).run(closed, args)


def jaxpr_runner(closed: ClosedJaxpr, sample: Sequence[Any]) -> Callable[..., Any]:
    """A function evaluating ``closed`` on arguments like ``sample``, looked up
    once for a loop: the host backend's compiled loop-body code itself when
    they are NumPy arrays or scalars (rank-0 results may come back as NumPy
    scalars), ``run_jaxpr`` otherwise."""
    if all(type(x) is np.ndarray or np.isscalar(x) for x in sample):
        return host_backend.body(closed)
    return lambda *args: run_jaxpr(closed, args)


def open_jaxpr(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
    """``closed`` with its constvars turned into leading inputs, and their values."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr((), j.constvars + j.invars, j.outvars, j.eqns), ()), closed.consts


def array_module(values: Iterable[Any]) -> Any:
    """NumPy, or the array module (CuPy) of the device backend of one of
    ``values``: for impls that allocate arrays and work on either backend."""
    for x in values:
        if type(x) is not np.ndarray:
            backend = backend_of_type(type(x))
            if backend is not None:
                return backend.array_module()
    return np


def plain_array(x: np.ndarray) -> np.ndarray:
    """The ndarray subclass ``x`` as the plain ndarray functrans computes with
    (a memmap's view), or a TypeError naming the user's line, the type and
    what to pass instead (``array_types``)."""
    reason = array_types.refusal(x)
    if reason is not None:
        raise TypeError(f"{format_source(user_source())}: an operand is "
                        f"{array_types.describe(x)}; {reason}")
    return array_types.plain(x)


def apply_impl(prim: Primitive, args: Sequence[Any], params: dict):
    """Run ``prim``'s impl for the backend of its operands: NumPy's unless one
    of them is a device array.  An ndarray subclass is refused or taken as a
    plain ndarray (``plain_array``)."""
    for i, x in enumerate(args):
        t = type(x)
        if t is not np.ndarray:
            if isinstance(x, np.ndarray):
                args = [*args[:i], plain_array(x), *args[i + 1:]]
                continue
            backend = backend_of_type(t)
            if backend is not None:
                return backend.apply(prim, args, params)
    return prim.impl(*args, **params)


# --------------------------------------------------------------------------
# Tracing a function and evaluating a Jaxpr
# --------------------------------------------------------------------------


class CacheInfo(typing.NamedTuple):
    """``functools.lru_cache``'s figures, plus the equations held."""

    hits: int
    misses: int
    maxsize: int
    currsize: int
    equations: int = 0


def program_cache(maxsize: int, max_equations: int) -> Callable[[Callable], ProgramCache]:
    """``functools.lru_cache(maxsize)`` for a function whose first argument is
    a program (``ClosedJaxpr``), bounded as well by the equations of the
    programs it is keyed on: a cached transform keeps a few times its key's
    equations alive (about 2 KB per equation for ``linearize_jaxpr``: 28 MB
    for each 12k-equation loop program), so 512 large programs would hold
    gigabytes and make every full garbage collection walk them.  The least
    recently used entries go first; the newest entry is kept even when it
    alone is over ``max_equations``.  Thread-safe; ``cache_info()`` and
    ``cache_clear()`` as for ``lru_cache``.  Cleared when ``debug_nans`` or
    ``debug_infs`` switches: a program's hash holds its equations' sources
    while they are on, so keys stored before the switch would no longer be
    found (or removed) by their hash."""

    def make(fn: Callable) -> ProgramCache:
        cache = ProgramCache(fn, maxsize, max_equations)
        on_value_checks.append(cache.cache_clear)
        return cache

    return make


class ProgramCache:
    """A function cached by ``program_cache``."""

    def __init__(self, fn: Callable, maxsize: int, max_equations: int):
        self._fn = fn
        self._maxsize = maxsize
        self._max_equations = max_equations
        # Insertion order is recency order; each entry keeps the key it was
        # stored under, and a hit stores it again under that one: reinserting
        # the caller's equal key instead would keep every call's freshly traced
        # program alive in the cache until the next call.
        self._entries: dict[tuple, tuple[Any, int, tuple]] = {}
        self._lock = threading.Lock()
        self._hits = self._misses = self._equations = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        entries = self._entries
        with self._lock:
            found = entries.pop(args, None)
            if found is not None:
                entries[found[2]] = found
                self._hits += 1
                return found[0]
            self._misses += 1
        result = self._fn(*args)
        size = len(args[0].eqns)
        with self._lock:
            if args not in entries:
                entries[args] = (result, size, args)
                self._equations += size
            while len(entries) > 1 and (len(entries) > self._maxsize
                                        or self._equations > self._max_equations):
                self._equations -= entries.pop(next(iter(entries)))[1]
        return result

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, self._maxsize, len(self._entries),
                             self._equations)

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = self._equations = 0


def fun_name(f: Callable) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


class _CollectorPause:
    """``with collector_paused:`` keeps Python's cyclic garbage collector from
    running inside, for work that makes many objects that mostly die by
    reference counting when it ends (a trace, a transform, the equations of
    a pass).  A full collection walks every object alive, the cached
    programs included, so collections run while a program of N equations is
    built cost more than linear in N: eager grad of a 12k-equation loop took
    224 ms a repeated call with the collector, 140 ms without.  Reentrant and
    shared by threads (a count, under a lock); the collector is enabled again
    when the last pause ends, and only if it was enabled when the first began."""

    def __init__(self):
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    def __enter__(self):
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._was_enabled:
                gc.enable()


collector_paused = _CollectorPause()


def trace_to_jaxpr(
    f: Callable,
    args: Sequence[Any],
    name: str | None = None,
    concrete: bool = False,
    reason: str = "",
    differentiated: bool = False,
    in_jit: bool = False,
) -> tuple[ClosedJaxpr, list[Any], bool]:
    """Trace ``f`` on flat arguments: arrays, scalars, tracers, or avals
    (ShapedArray / ShapeDtypeStruct) for arguments with no value.
    ``concrete``, ``differentiated``, ``in_jit``: as for ``JaxprTrace``.

    Returns the Jaxpr, ``f``'s raw outputs (tracers of the finished trace,
    or whatever else ``f`` returned) for the caller to flatten, and whether
    the Jaxpr depends on concrete values.  ``f`` takes the tracers
    positionally and returns a flat sequence of outputs.
    """
    trace = JaxprTrace(name or fun_name(f), concrete=concrete, reason=reason,
                       differentiated=differentiated, in_jit=in_jit)
    with collector_paused, trace:
        tracers = [
            trace.new_arg(_arg_aval(x), _arg_val(x), x if isinstance(x, Tracer) else None)
            for x in args
        ]
        outs = list(f(*tracers))
        closed = trace.to_jaxpr(outs)
    return closed, outs, trace.concretized


_ABSTRACT = (ShapedArray, ShapeDtypeStruct)


def _arg_val(x) -> Any:
    """An argument's value for value-carrying tracing: none for an aval, and a
    tracer of an enclosing trace carries its own (possibly absent) value."""
    if isinstance(x, Tracer):
        return x.val
    return None if isinstance(x, _ABSTRACT) else x


def _arg_aval(x) -> ShapedArray:
    """Avals of trace arguments; a ShapedArray stands for itself (weakness kept)."""
    return x if type(x) is ShapedArray else get_aval(x)


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args) -> list[Any]:
    """Run ``jaxpr`` by binding each equation: concrete NumPy arrays in give
    arrays out; tracers in re-emit the program into the current trace."""
    env: dict[int, Any] = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    state = _state
    outer = state.source
    try:
        for e in jaxpr.eqns:
            state.source = e.source or outer  # the equations it binds are the user's
            out = bind(e.primitive, *map(read, e.inputs), **e.params)
            if e.primitive.multiple_results:
                for v, x in zip(e.outputs, out):
                    env[id(v)] = x
            else:
                env[id(e.outputs[0])] = out
    finally:
        state.source = outer
    return [read(a) for a in jaxpr.outvars]


def _sub_jaxprs(params: dict) -> Iterable[Jaxpr | ClosedJaxpr]:
    for value in params.values():
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, (Jaxpr, ClosedJaxpr)):
                yield v


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Re-derive every aval from the primitives' shape rules; raise
    ``JaxprTypeError`` naming the first equation that disagrees."""
    if isinstance(jaxpr, ClosedJaxpr):
        if len(jaxpr.consts) != len(jaxpr.jaxpr.constvars):
            raise JaxprTypeError(
                f"{len(jaxpr.jaxpr.constvars)} constvars bound to {len(jaxpr.consts)} "
                f"values\n{jaxpr}"
            )
        for v, c in zip(jaxpr.jaxpr.constvars, jaxpr.consts):
            if get_aval(c).strip_weak() != v.aval.strip_weak():
                raise JaxprTypeError(
                    f"constvar of type {v.aval.str_short()} bound to a value of type "
                    f"{get_aval(c).str_short()}"
                )
        jaxpr = jaxpr.jaxpr
    defined: set[int] = set()

    def define(vs: Iterable[Var]):
        for v in vs:
            if id(v) in defined:
                raise JaxprTypeError(f"variable {v} is bound twice\n{jaxpr}")
            defined.add(id(v))

    def check_atom(a, where):
        if type(a) is Literal:
            if get_aval(a.val).strip_weak().dtype != a.aval.dtype or a.aval.shape != ():
                raise JaxprTypeError(f"literal {a.val!r} has a wrong type in {where}")
        elif id(a) not in defined:
            raise JaxprTypeError(f"{where} uses a variable before it is defined\n{jaxpr}")

    define(jaxpr.constvars)
    define(jaxpr.invars)
    for i, e in enumerate(jaxpr.eqns):
        where = f"equation {i} ({e.primitive.name})"
        for a in e.inputs:
            check_atom(a, where)
        for sub in _sub_jaxprs(e.params):  # the programs of control flow, custom rules
            try:
                check_jaxpr(sub)
            except JaxprTypeError as err:
                raise JaxprTypeError(f"in a sub-Jaxpr of {where}: {err}") from None
        try:
            out = e.primitive.abstract_eval(*[a.aval for a in e.inputs], **e.params)
        except FunctransError as err:
            raise JaxprTypeError(f"{where} fails its shape rule: {err}\n{jaxpr}") from None
        expected = out if e.primitive.multiple_results else [out]
        got = [v.aval for v in e.outputs]
        if [a.strip_weak() for a in expected] != [a.strip_weak() for a in got]:
            raise JaxprTypeError(
                f"{where} produces {[a.str_short() for a in got]} but its shape rule "
                f"gives {[a.str_short() for a in expected]}\n{jaxpr}"
            )
        define(e.outputs)
    for a in jaxpr.outvars:
        check_atom(a, "the output list")
