"""Primitives and their registry: ``Primitive`` (a name plus its rules),
``registry`` (every declared primitive, loading on-demand families on first
read), ``RuleFactory`` and ``lookup_primitive``.

Primitives are declared in ``functrans.primitives``, each once with all of
its rules.  ``Primitive.bind`` is ``functrans.core.tracing.bind``, which
installs itself here (``install_bind``): the tracing room stands above this
one.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Callable

from functrans.errors import MissingRuleError, UnknownPrimitiveError

#: Applies a primitive to operands (``Primitive.bind``): ``tracing.bind``,
#: installed by ``functrans.core.tracing``.
_bind: Callable[..., Any]


def install_bind(bind: Callable[..., Any]) -> None:
    """Make ``bind(prim, *args, **params)`` what ``Primitive.bind`` calls."""
    global _bind
    _bind = bind


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
        return _bind(self, *args, **params)

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


def lookup_primitive(name: str) -> Primitive:
    try:
        return registry[name]
    except KeyError:
        raise UnknownPrimitiveError(
            f"unknown primitive {name!r}; known primitives: {', '.join(sorted(registry))}"
        ) from None
