"""The IR: ``Var``, ``Literal``, ``Eqn``, ``Jaxpr`` and ``ClosedJaxpr``, their
printing (``pp_jaxpr``) and drawing (``jaxpr_to_dot``), and ``check_jaxpr``.

The IR is four small immutable records (``Var``, ``Literal``, ``Eqn``,
``Jaxpr``) plus ``ClosedJaxpr``, which pairs a Jaxpr with the values of its
constants.  ``str(jaxpr)`` prints it, ``check_jaxpr`` type-checks it,
``jaxpr.to_dot()`` draws it, and Jaxprs compare and hash structurally so that
transforms and ``jit`` can cache on them.  Calling a ``ClosedJaxpr`` runs it
with the evaluator that ``functrans.core.evaluation``, which stands above the
IR, installs (``install_evaluator``).
"""

from __future__ import annotations

import itertools
import os
import struct
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from functrans import dtypes
from functrans.core import checks
from functrans.core.avals import ShapedArray, get_aval
from functrans.core.context import Source
from functrans.core.primitives import Primitive
from functrans.errors import FunctransError, JaxprTypeError

#: Runs a closed program's equations on its arguments (``ClosedJaxpr.__call__``):
#: ``eval_jaxpr``, installed by ``functrans.core.evaluation``.
_evaluate: Callable[..., list[Any]]


def install_evaluator(evaluate: Callable[..., list[Any]]) -> None:
    """Make ``evaluate(jaxpr, consts, *args)`` what calling a ``ClosedJaxpr`` runs."""
    global _evaluate
    _evaluate = evaluate


Atom = "Var | Literal"
_F64 = np.dtype(np.float64)
#: A Python float's bytes, as ``np.asarray(v).tobytes()`` gives them (native order).
_DOUBLE = struct.Struct("=d")


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
        if self._key is None or self._lines is not checks.checking:
            self._lines = checks.checking
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
                if checks.checking:  # a cached program must not name another's lines
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

    def opened(self) -> Jaxpr:
        """This program with its constvars as leading inputs.  Its structure
        key, where this one's is memoised, is made from it: the variables
        are numbered alike (constvars first), only the binders' counts
        before them change, so a transform caching on the opened program
        pays no walk of its equations (12 ms for a 12k-equation one)."""
        j = Jaxpr((), self.constvars + self.invars, self.outvars, self.eqns)
        key = self._key
        if key is not None and self._lines is checks.checking:
            # key: n_c, its avals (3 items each), n_i, its avals, the rest.
            n_c, n_i = len(self.constvars), len(self.invars)
            j._key = (0, n_c + n_i) + key[1:1 + 3 * n_c] + key[2 + 3 * n_c:]
            j._lines = self._lines
        return j

    def __eq__(self, other):
        return type(other) is Jaxpr and (self is other or self._structure() == other._structure())

    def __hash__(self):
        if self._hash is None or self._lines is not checks.checking:
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
        if self._hash is None or self._lines is not checks.checking:
            self._lines = checks.checking
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
        return _evaluate(self.jaxpr, self.consts, *args)


def _sub_jaxprs(params: dict) -> Iterable[Jaxpr | ClosedJaxpr]:
    for value in params.values():
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, (Jaxpr, ClosedJaxpr)):
                yield v


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


def open_jaxpr(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
    """``closed`` with its constvars turned into leading inputs, and their values."""
    return ClosedJaxpr(closed.jaxpr.opened(), ()), closed.consts


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
