"""``jit``: trace once per argument signature, optimise, compile to straight-line
NumPy code, and cache.

The cache key is the argument pytree structure, each leaf's shape and dtype
(a Python scalar is keyed by its type, never its value, so ``f(1.0)`` and
``f(2.0)`` share an entry), the static arguments and the backend.  Like
JAX's, jit's contract is that the function is pure: values it closes over
(globals, captured arrays) are baked in when it is traced, captured arrays
as copies taken then, and Python control flow on traced values raises a
concretization error.  A result is never an array the caller passed in or
one the program keeps (a constant, a pooled buffer): where the program's
output is, or may be a view of, one of those, it is copied.

The cache of each jitted function holds at most ``config.jit_cache_size``
programs and drops the least recently used beyond that.  It is safe under
concurrent calls: bookkeeping happens under a lock, tracing and compiling
outside it (so a function traced in one thread may call jitted functions,
itself included, without deadlock); two threads missing on the same
signature may both compile, and the first program stored is kept.

Called with tracers (inside ``grad``, ``vmap``, another ``jit`` ...), a
jitted function contributes its optimised Jaxpr to the enclosing trace.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import threading
import time
import warnings
import weakref
from collections import OrderedDict
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from functrans import config, core, tiering
from functrans._api_util import (
    check_argnames,
    check_argnames_exist,
    check_argnums,
    check_callable,
    check_leaves,
    normalize_argnums,
)
from functrans.backends.numpy import Compiled
from functrans.core import ClosedJaxpr, RecentHits, ShapedArray, ShapeDtypeStruct, Tracer
from functrans.devices import check_devices, is_device_array
from functrans.errors import DeviceError, FunctransError
from functrans.interpreters.vmap import bound_axes
from functrans.passes.fuse import fuse, unfuse_small
from functrans.passes.pipeline import run_passes
from functrans.primitives.fused import cpu_fusible, have_numexpr
from functrans.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

#: Where jit says, at debug level, that a program runs on the NumPy tier
#: although the native tier was asked for (Numba lacks something it needs).
_log = logging.getLogger(__name__)

__all__ = ["CacheInfo", "JitCacheMiss", "Lowered", "ShapeDtypeStruct", "TierInfo", "disable_jit",
           "jit"]

_SCALAR_TYPES = (bool, int, float, complex)


class _Counts(NamedTuple):
    hits: int
    misses: int
    entries: int


class CacheInfo(_Counts):
    """A jitted function's cache: ``hits``, ``misses`` (each one a
    compilation) and ``entries`` (programs held), which unpack and compare as
    a tuple; besides, ``evictions`` (programs dropped to stay within the
    size), ``maxsize`` (``functrans.config.jit_cache_size``), ``compile_time``
    (seconds spent tracing, optimising and generating code for the misses)
    and ``native_compile_time`` (the part of it spent compiling or loading
    native kernels, in the background for a program the tiering rule
    moved); ``tiers``, one ``TierInfo`` per entry, least recently used
    first: its argument types, the tier it runs in and why."""

    evictions: int = 0
    maxsize: int = 0
    compile_time: float = 0.0
    native_compile_time: float = 0.0
    tiers: tuple = ()

    def __new__(cls, hits: int, misses: int, entries: int, evictions: int = 0,
                maxsize: int = 0, compile_time: float = 0.0, native_compile_time: float = 0.0,
                tiers: tuple = ()):
        info = super().__new__(cls, hits, misses, entries)
        info.evictions, info.maxsize = evictions, maxsize
        info.compile_time, info.native_compile_time = compile_time, native_compile_time
        info.tiers = tiers
        return info

    def __repr__(self):
        evicted = f", evictions={self.evictions}" if self.evictions else ""
        return f"CacheInfo(hits={self.hits}, misses={self.misses}, entries={self.entries}{evicted})"


class TierInfo(NamedTuple):
    """One cache entry's tier: ``signature``, its arguments' types
    (``"f64[1000], f64[]"``); ``tier``, ``"numpy"`` or ``"native"`` (``"gpu"``
    for a GPU program); ``reason``, why it runs there."""

    signature: str
    tier: str
    reason: str


class JitCacheMiss(UserWarning):
    """Issued by ``jit(f, explain_cache_misses=True)`` on each new compilation."""


def _leaf_key(x: Any) -> Any:
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if t in _SCALAR_TYPES:
        return t
    if isinstance(x, Tracer):
        return (x.aval.shape, x.aval.dtype, x.aval.weak_type)
    if is_device_array(x):
        return (tuple(x.shape), x.dtype, "gpu")
    if isinstance(x, np.generic):  # immutable, where a 0-d array is not: other programs
        return (t, x.dtype)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return (tuple(x.shape), x.dtype)
    return (t, id(x))  # not an array: tracing it raises the error that names it


def _static_kind(v: Any) -> Any:
    """What a static argument's key holds beside its value: ``True == 1 ==
    1.0`` and ``-0.0 == 0.0`` as keys, yet they trace different programs (an
    int8 array times ``1.0`` is float64, times ``-0.0`` gives other signs).
    Its type, a float's or complex's bits, and the same for tuple items."""
    t = type(v)
    if t is tuple:
        return tuple(_static_kind(x) for x in v)
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return (t, np.asarray(v).tobytes())
    return t


def _leaf_aval(x: Any) -> ShapedArray:
    return x.aval if isinstance(x, Tracer) else core.get_aval(x)


# -- captured arrays are snapshotted ----------------------------------------------

#: The arrays jit made for its programs (copies of captured arrays, constants
#: folded from them), by id: a program traced through another jitted
#: function's program (jit of a jit) uses them as they are, not copying twice.
_OWNED: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def _is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) or is_device_array(x)


def _is_owned(x: Any) -> bool:
    return _OWNED.get(id(x)) is x


def _record_owned(x: Any) -> Any:
    try:
        _OWNED[id(x)] = x
    except TypeError:  # an array type without weak references: copied again if recaptured
        pass
    return x


def _may_share(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    if type(a) is type(b):  # two device arrays
        return bool(core.array_module([a]).may_share_memory(a, b))
    return False


def _snapshot(x: Any) -> Any:
    """A copy of the captured array ``x``, on its device.  A broadcast view
    (zero strides, such as instantiated zero tangents) copies only the data
    under it and stays a broadcast view of that copy."""
    if isinstance(x, np.ndarray):
        if x.size > 1 and 0 in x.strides:
            under = x[tuple(slice(0, 1) if s == 0 else slice(None) for s in x.strides)]
            return np.broadcast_to(under.copy(order="K"), x.shape)
        return x.copy(order="K")
    device = getattr(x, "device", None)
    on_device = device if isinstance(device, contextlib.AbstractContextManager) \
        else contextlib.nullcontext()
    with on_device:
        return x.copy()


def _snapshot_consts(optimized: ClosedJaxpr, captured: Sequence[Any]) -> ClosedJaxpr:
    """``optimized`` with constants of its own: each that is, or may share
    memory with, an array the traced function captured (``captured``, the
    traced Jaxpr's constants) is replaced by a copy.  Taken once per
    compilation and after the passes, which read the captured arrays at the
    same moment, so that an array only folded away or dropped is never
    copied; the other constants (folded from literals and earlier copies)
    are jit's already."""
    theirs = [c for c in captured if _is_array(c) and not _is_owned(c)]
    consts, copies = [], {}
    for c in optimized.consts:
        if _is_array(c) and not _is_owned(c):
            if any(c is u or _may_share(c, u) for u in theirs):
                if id(c) not in copies:
                    copies[id(c)] = _record_owned(_snapshot(c))
                c = copies[id(c)]
            else:
                _record_owned(c)
        consts.append(c)
    return ClosedJaxpr(optimized.jaxpr, consts) if copies else optimized


def _fresh(x: Any) -> Any:
    """``x`` as a jitted function may return it: a concrete array copied
    (evaluated into an enclosing trace, an output that does not depend on the
    traced values is an input or a constant, or a view of one)."""
    return x.copy() if _is_array(x) else x


class Lowered:
    """The result of ``jit(f).lower(*args)``: the optimised Jaxpr and the
    generated Python source; ``compile()`` gives the callable executable.

    Lowered for the GPU (``device="gpu"``, or CuPy arguments), ``jaxpr`` is
    the fused program that runs, ``kernels`` its CUDA kernels (each with
    ``name``, ``source``, the complete ``.cu`` text, and ``eqns``, the
    equations it computes), and ``compile_check()`` compiles them with nvcc;
    none of this needs CuPy or a GPU.
    """

    def __init__(self, entry: _Entry, device: str = "cpu"):
        self._entry = entry
        self.device = device
        self.jaxpr: ClosedJaxpr = entry.compiled.jaxpr if device == "gpu" else entry.jaxpr
        self.source: str = entry.compiled.source
        #: The Numba source of each native kernel the program calls
        #: (``compiler="native"``; empty otherwise).
        self.native_sources: list[str] = list(entry.native_sources)

    @property
    def kernels(self) -> list:
        """The CUDA kernels of a GPU lowering, in program order ([] on the CPU)."""
        return list(self._entry.compiled.lowering.kernels) if self.device == "gpu" else []

    def compile_check(self, arch: str = "90") -> list:
        """Compile every kernel with nvcc for ``sm_<arch>`` (one nvcc call) and
        return the kernels checked; a KernelCompileError shows the source and
        the equations of a kernel that fails."""
        from functrans.backends import cuda  # the GPU code generator loads on first use

        return cuda.compile_check(self.kernels, arch=arch)

    def compile(self) -> Callable:
        entry = self._entry

        def executable(*args, **kwargs):
            leaves = tree_flatten((args, kwargs))[0]
            return tree_unflatten(entry.out_tree, entry.compiled(*leaves))

        return executable

    def __repr__(self):
        return f"Lowered(\n{self.jaxpr}\n)"


class _Slot(NamedTuple):
    """A cached entry and its bookkeeping: ``token`` is its place in the
    least-recently-used order, ``key`` its signature and ``fast_key`` the
    shorter key of the positional-arrays path (or None)."""

    entry: _Entry
    token: int
    key: Any
    fast_key: tuple | None


class _Entry(NamedTuple):
    jaxpr: ClosedJaxpr
    compiled: Any  # a backends.numpy.Compiled, or a backends.cupy.Compiled for the GPU
    out_tree: Any
    single_output: bool  # the output is one array, not a container
    # Closed over a tracer of an enclosing transform: evaluated by binding into
    # that transform's trace, and never cached past it.
    traced_consts: bool
    native_seconds: float = 0.0  # spent compiling or loading its native kernels
    native_sources: tuple = ()  # the Numba source of its native kernels
    tier: tiering.Tier | None = None  # where it runs and why (None: not cached, or the GPU)
    # The positions of the inputs whose memory layout the trace took to be
    # C-contiguous (an in-place update through a reshape of them): a call
    # with another layout there runs a program traced at its arrays, cached
    # by their layouts (_call).
    c_inputs: tuple[int, ...] = ()
    # A program traced at arrays: each input's core.memory_layout (None: C
    # order, or no array), for cache_info's signatures.
    layouts: tuple = ()


_COMPILERS = ("auto", "numpy", "native")


class _Jitted(RecentHits):
    """The callable ``jit`` returns; its cache counts hits and keeps its most
    recent slot as ``RecentHits`` says."""

    def __init__(self, fun, static_argnums, static_argnames, explain_cache_misses,
                 compiler=None):
        super().__init__()
        check_callable("jit", fun)
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = core.fun_name(fun)
        self._label = f"jit({self._name})"
        if compiler is None:
            compiler = config.jit_compiler
        if compiler not in _COMPILERS:
            raise ValueError(f"{self._label}: compiler must be 'auto', 'numpy' or 'native', "
                             f"got {compiler!r}")
        if compiler == "native":
            from functrans.backends import native  # Numba itself loads on the first lowering

            native.check_available(self._label)
        self._compiler = compiler
        self._compile_time = self._native_time = 0.0
        nums = check_argnums(self._label, static_argnums, static=True)
        self._static_argnums = (nums,) if isinstance(nums, int) else nums
        self._static_argnames = check_argnames(self._label, "static_argnames", static_argnames)
        check_argnames_exist(self._label, fun, self._static_argnames)
        self._explain = explain_cache_misses
        # The cache: signature -> slot, the same slots by fast key, and by token
        # in least-recently-used order.  Readers look slots up without the lock
        # (a dict lookup is atomic); every change happens under it.
        self._entries: dict[Any, _Slot] = {}
        self._fast: dict[tuple, _Slot] = {}
        self._order: OrderedDict[int, _Slot] = OrderedDict()
        self._tokens = itertools.count()
        # Reentrant: hashing a key may run a static argument's __hash__/__eq__.
        self._lock = threading.RLock()
        self._misses = self._evictions = 0
        self._last_signature: tuple | None = None

    # -- the call path ---------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if _disabled_anywhere and _disabled.on:
            return self._fun(*args, **kwargs)
        if not kwargs and not self._static_argnums:
            # The common case, kept short: positional arrays only (an argument
            # of another type leaves the key short, and the call to _call).
            if len(args) == 1:
                a = args[0]
                slot = self._fast.get(((a.shape, a.dtype),)) if type(a) is np.ndarray else None
            else:
                key = [(a.shape, a.dtype) for a in args if type(a) is np.ndarray]
                slot = self._fast.get(tuple(key)) if len(key) == len(args) else None
            if slot is not None:
                # RecentHits._hit, written out: the method call was a tenth of
                # a cached call of a small program.
                next(self._hits)
                if self._newest is not slot:
                    self._make_newest(slot)
                entry = slot.entry
                tier = entry.tier
                if tier is not None and (tier.watching or tier.undo is not None):
                    outs = _timed(entry, tier, args)  # for the tiering rule
                else:
                    outs = entry.compiled.fn(*args)
                return outs[0] if entry.single_output else tree_unflatten(entry.out_tree, outs)
        return self._call(args, kwargs)

    def _move_to_newest(self, slot: _Slot) -> None:
        """``RecentHits``' move: ``slot`` to the end of ``_order``.  No lock:
        ``move_to_end`` is one atomic step, and a slot another thread evicted
        meanwhile still runs this call.  Threads racing here may leave the
        order of recent use slightly off, which changes at most which entry a
        full cache evicts next."""
        try:
            self._order.move_to_end(slot.token)
        except KeyError:
            pass

    def _call(self, args, kwargs):
        if not self._static_argnums and not self._static_argnames:
            leaves, tree = tree_flatten((args, kwargs))
            static_key: tuple = ()
        else:
            dyn_args, dyn_kwargs, static_key = self._split(args, kwargs)
            leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
        if any(type(x) is not np.ndarray and isinstance(x, np.ndarray) for x in leaves):
            # An ndarray subclass is refused, or runs as a plain ndarray (a memmap).
            dyn = tree_unflatten(tree, leaves)
            leaves = (check_leaves(self._label, "argument ", dyn[0])[0]
                      + check_leaves(self._label, "keyword argument ", dyn[1])[0])
        # The named vmap axes around the call: a collective's shapes and scale
        # (all_gather, pmean) depend on their sizes.
        axes = bound_axes()
        key = (tree, tuple(map(_leaf_key, leaves)), static_key, axes)
        slot = self._entries.get(key)
        if slot is None:
            device = check_devices(self._label, "argument ", (args, kwargs), leaves, call=True)
            fast = None
            if not kwargs and not static_key and not axes and all(
                type(a) is np.ndarray for a in args
            ):
                fast = tuple([(a.shape, a.dtype) for a in args])
            entry = self._compile(key, fast, args, kwargs, leaves, device)
            if entry.c_inputs and not _laid_out_as_assumed(entry.c_inputs, leaves):
                entry = self._at_layouts(key, args, kwargs, leaves)
        elif slot.entry.c_inputs and not _laid_out_as_assumed(slot.entry.c_inputs, leaves):
            entry = self._at_layouts(key, args, kwargs, leaves)
        else:
            self._hit(slot)
            entry = slot.entry
        # Under a transform, a program with effects binds its equations: a
        # collective over a vmapped axis is then recorded for the vmap to
        # batch, as core.run_jaxpr does, instead of run by the compiled code.
        if entry.traced_consts or any(isinstance(x, Tracer) for x in leaves) or (
            entry.jaxpr.jaxpr.has_effect and core.current_trace() is not None
        ):
            outs = core.eval_jaxpr(entry.jaxpr.jaxpr, entry.jaxpr.consts, *leaves)
            outs = [_fresh(x) for x in outs]
        elif entry.tier is not None and (entry.tier.watching or entry.tier.undo is not None):
            outs = _timed(entry, entry.tier, leaves)  # for the tiering rule
        else:
            outs = entry.compiled.fn(*leaves)
        return tree_unflatten(entry.out_tree, outs)

    def _at_layouts(self, key, args, kwargs, leaves, depth=0) -> _Entry:
        """The program for a call whose arrays are laid out otherwise than the
        program of ``key`` took them to be (their layouts decide NumPy's
        views, as they do for the function run on them): traced at the
        arrays and cached by their layouts (``core.memory_layout``), a miss
        the first time.  Tracers (a call under a transform) are laid out as
        their traces say: traced at them each time, and never cached.
        ``depth``: as for ``_compile``."""
        if any(isinstance(x, Tracer) for x in leaves):
            return self._compile(None, None, args, kwargs, leaves, at_arrays=True,
                                 depth=depth + 1)
        key = (key, tuple([core.memory_layout(x) if type(x) is np.ndarray else None
                           for x in leaves]))
        slot = self._entries.get(key)
        if slot is None:
            return self._compile(key, None, args, kwargs, leaves, at_arrays=True,
                                 depth=depth + 1)
        self._hit(slot)
        return slot.entry

    def _split(self, args: tuple, kwargs: dict):
        nums = normalize_argnums(self._label, self._static_argnums, len(args), static=True)
        statics = [(i, args[i]) for i in nums]
        statics += [(k, kwargs[k]) for k in self._static_argnames if k in kwargs]
        for where, value in statics:
            if isinstance(value, Tracer):
                raise TypeError(
                    f"{self._label}: static argument {where!r} is a traced value; static "
                    "arguments must be concrete, hashable Python values. Make it a regular "
                    "(traced) argument, or compute it outside the transform"
                )
            try:
                hash(value)
            except TypeError:
                raise TypeError(
                    f"{self._label}: static argument {where!r} of type "
                    f"{type(value).__name__} is not hashable; pass a hashable value (a tuple "
                    "instead of a list) or make it a regular argument"
                ) from None
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return dyn_args, dyn_kwargs, tuple((w, v, _static_kind(v)) for w, v in statics)

    # -- tracing and compiling ---------------------------------------------------

    def _compile(self, key, fast_key, args, kwargs, leaves, device="cpu",
                 at_arrays=False, depth=0) -> _Entry:
        """Trace and compile a program for this call and cache it under
        ``key`` (and ``fast_key``; None: not cached).  ``at_arrays``: traced
        at the call's arrays (``_at_layouts``), whose layouts the trace
        follows.  ``depth``: the calls between ``_call`` and this one."""
        with self._lock:
            self._misses += 1
            reason = None
            if self._explain:
                reason = _layout_reason(args, kwargs) if at_arrays else \
                    self._explain_miss(args, kwargs, key)
        # No lock while tracing: the function may call jitted functions, this one too.
        checks = core.checks.value_checks  # generated with or without the checks of debug_nans
        start = time.perf_counter()
        assumed: list[int] = []
        # A NumPy scalar is traced as itself: its aval is a 0-d array's, but an
        # in-place operator rebinds it where it updates a 0-d array.
        avals = leaves if at_arrays else [x if isinstance(x, np.generic) else _leaf_aval(x)
                                          for x in leaves]
        try:
            entry = self._lower(args, kwargs, avals, device, assumed)
        except FunctransError:
            # Taking an input to be C-contiguous, the trace may refuse what the
            # call's array allows (a view of a member of an F-ordered vmap
            # argument): traced at the arrays instead, cached by their layouts.
            if at_arrays or _laid_out_as_assumed(assumed, leaves):
                raise
            with self._lock:
                self._misses -= 1
            return self._at_layouts(key, args, kwargs, leaves, depth + 1)
        if at_arrays:
            entry = entry._replace(layouts=tuple([
                core.memory_layout(x) if type(x) is np.ndarray else None for x in leaves]))
        elif assumed:
            entry = entry._replace(c_inputs=tuple(sorted(set(assumed))))
            fast_key = None  # the layouts are checked on each call, in _call
        spent = time.perf_counter() - start
        with self._lock:
            self._compile_time += spent
            self._native_time += entry.native_seconds
        if reason is not None:
            native = f", {entry.native_seconds * 1e3:.1f} ms of it native kernels" \
                if self._compiler == "native" and device == "cpu" else ""
            warnings.warn(f"{self._label}: compiling for a new signature ({reason}); compiled "
                          f"in {spent * 1e3:.1f} ms{native}", JitCacheMiss, stacklevel=4 + depth)
        if entry.jaxpr.jaxpr.has_effect:
            fast_key = None  # _call decides per call how to run it (see there)
        if key is None:  # traced at tracers: laid out as their traces say, this once
            return entry
        if entry.traced_consts or core.checks.value_checks != checks:
            return entry  # not kept: a switch of the checks cleared the cache meanwhile
        kept = self._insert(key, fast_key, entry)
        tier = kept.tier
        if kept is entry and tier is not None and tier.assessment is not None:
            self._watch(key, entry, tier)
        return kept

    def _watch(self, key, entry: _Entry, tier: tiering.Tier) -> None:
        """Let the tiering rule time ``entry``'s calls (or, with
        ``jit_tier_up="eager"``, queue it now); the compiler thread calls
        back ``install`` with its native lowering."""
        this = weakref.ref(self)

        def install(lowering) -> bool:
            jitted = this()
            return jitted is not None and jitted._install(key, entry, lowering)

        tier.watch(install, config.native_cache_dir)
        if config.jit_tier_up == "eager":
            tier.queue()

    def _install(self, key, old: _Entry, lowering) -> bool:
        """Put ``old``'s program with its native ``lowering`` in its place in
        the cache (called by the compiler thread); False where ``old`` left
        the cache meanwhile (evicted, cleared, or the checks changed)."""
        compiled = Compiled(lowering.jaxpr, self._name, own_outputs=True)
        tier = old.tier
        if tier is None:  # (a watched entry always has its tier)
            return False
        new = old._replace(compiled=compiled, native_seconds=lowering.compile_seconds,
                           native_sources=tuple(lowering.sources))
        this = weakref.ref(self)

        def undo() -> bool:
            jitted = this()
            return jitted is not None and jitted._swap(key, new, old)

        with self._lock:
            if core.checks.value_checks != (False, False) or not self._swap(key, old, new):
                tier.stay("it left the cache while its native compile ran")
                return False
            self._native_time += lowering.compile_seconds
            tier.moved(len(lowering.sources), undo)
        return True

    def _swap(self, key, current: _Entry, new: _Entry) -> bool:
        """Put ``new`` in the place of ``current`` under ``key`` (a move to
        the native tier, or back); False where ``current`` is not there."""
        with self._lock:  # (reentrant: _install holds it)
            slot = self._entries.get(key)
            if slot is None or slot.entry is not current:
                return False
            swapped = slot._replace(entry=new)
            self._entries[key] = swapped
            if slot.fast_key is not None and self._fast.get(slot.fast_key) is slot:
                self._fast[slot.fast_key] = swapped
            if slot.token in self._order:
                self._order[slot.token] = swapped
        return True

    def _insert(self, key, fast_key, entry: _Entry) -> _Entry:
        """Store ``entry`` under ``key`` and drop the least recently used
        entries beyond ``config.jit_cache_size``.  If another thread stored one
        for ``key`` meanwhile, that one is kept and returned (both are correct;
        the cache keeps one program per signature)."""
        with self._lock:
            slot = self._entries.get(key)
            if slot is not None:
                self._order.move_to_end(slot.token)
                self._newest = slot
                return slot.entry
            slot = _Slot(entry, next(self._tokens), key, fast_key)
            self._entries[key] = slot
            if fast_key is not None:
                self._fast[fast_key] = slot
            self._order[slot.token] = slot
            self._newest = slot
            while len(self._order) > config.jit_cache_size:
                _, old = self._order.popitem(last=False)
                del self._entries[old.key]
                if old.fast_key is not None and self._fast.get(old.fast_key) is old:
                    del self._fast[old.fast_key]
                self._evictions += 1
        return entry

    def _lower(self, args, kwargs, avals, device="cpu", c_assumed=None) -> _Entry:
        """Trace and compile the program for ``avals`` (or arrays, whose
        memory layouts the trace then follows); ``c_assumed``: as for
        ``core.trace_to_jaxpr``."""
        nums = normalize_argnums(self._label, self._static_argnums, len(args), static=True)
        static_kw = {k: kwargs[k] for k in self._static_argnames if k in kwargs}
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_kw}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        check_leaves(self._label, "argument ", dyn_args)
        check_leaves(self._label, "keyword argument ", dyn_kwargs)
        in_tree = tree_flatten((dyn_args, dyn_kwargs))[1]
        fun = self._fun

        def call(*dyn, **dyn_kw):
            it = iter(dyn)
            full = [args[i] if i in nums else next(it) for i in range(len(args))]
            return fun(*full, **dyn_kw, **static_kw)

        out_cell: list = []

        def flat(*xs):
            a, k = tree_unflatten(in_tree, xs)
            out = call(*a, **k)
            out_leaves, out_tree = check_leaves(self._label, "output", out)
            out_cell.append(out_tree)
            return out_leaves

        closed, _, _ = core.trace_to_jaxpr(flat, avals, name=self._name, reason=" inside jit",
                                           in_jit=True, c_assumed=c_assumed)
        optimized = run_passes(closed)
        traced = any(isinstance(c, Tracer) for c in optimized.consts)
        if not traced:  # (a traced program's constants go to the enclosing trace)
            optimized = _snapshot_consts(optimized, closed.consts)
        out_tree = out_cell[-1]
        single = out_tree.num_leaves == 1 and out_tree.num_nodes == 1
        compiled: Any
        tier: tiering.Tier | None = None
        if device == "gpu":
            from functrans.backends import cupy as gpu_backend  # loaded for GPU work only

            compiled = gpu_backend.Compiled(optimized, self._name, own_outputs=True)
            return _Entry(optimized, compiled, out_tree, single, traced)
        if self._compiler == "native" and not traced and core.checks.value_checks == (False, False):
            # (while debug_nans is on, the NumPy calls below, so an error names one equation)
            lowering = self._lower_native(optimized)
            if lowering is not None:
                compiled = Compiled(lowering.jaxpr, self._name, own_outputs=True)
                narrow = ", ".join(tiering.narrow_floats(optimized.jaxpr))
                reason = "compiler='native'" + (
                    f"; its {narrow} operations run as NumPy calls (Numba has no {narrow} "
                    "arithmetic)" if narrow else "")
                return _Entry(optimized, compiled, out_tree, single, traced,
                              lowering.compile_seconds, tuple(lowering.sources),
                              tiering.Tier("native", reason))
            tier = tiering.Tier("numpy", "compiler='native', but Numba cannot compile it "
                                "(see the debug log)")
        elif not traced:
            tier = self._tier(optimized)
        program = optimized
        if core.checks.value_checks == (False, False):  # debug_nans names single equations
            program = _fuse_for_cpu(optimized)
        compiled = Compiled(program, self._name, own_outputs=True)
        return _Entry(program, compiled, out_tree, single, traced, tier=tier)

    def _tier(self, optimized: ClosedJaxpr) -> tiering.Tier:
        """The tier a new CPU program starts in and why: the NumPy tier,
        watched by the tiering rule where it may move (docs/jit.md, "Tiers")."""
        if self._compiler == "numpy":
            return tiering.Tier("numpy", "compiler='numpy'")
        if config.jit_tier_up == "never":
            return tiering.Tier("numpy", "jit_tier_up='never'")
        if core.checks.value_checks != (False, False):
            return tiering.Tier("numpy", "debug_nans or debug_infs is on")
        if optimized.jaxpr.has_effect:
            return tiering.Tier("numpy", "it has effects (collectives, callbacks)")
        verdict = tiering.assess(optimized, config.jit_tier_numerics)
        if verdict.never is not None:
            return tiering.Tier("numpy", verdict.never)
        if not verdict.exact and config.jit_tier_numerics == "exact":
            return tiering.Tier(
                "numpy", "its native results could differ from the NumPy tier's in the last "
                f"bits ({verdict.differs}); jit_tier_numerics='close' lets it move")
        return tiering.Tier(
            "numpy", f"in the NumPy tier; the rule watches its calls (native gain "
            f"{verdict.gain:.0%}, compile about {verdict.compile_seconds:.1f} s)",
            verdict, optimized, self._label)

    def _lower_native(self, optimized: ClosedJaxpr) -> Any:
        """The native tier's lowering of ``optimized``, or None where Numba
        has no implementation of a type or an operation it needs (its
        ``NotImplementedError``, such as ``'float16'`` for float16
        arithmetic): the NumPy tier then runs the program, with the same
        numbers, and the ``functrans.jit`` logger says so at debug level."""
        from functrans.backends import native

        try:
            return native.lower(optimized, config.native_cache_dir)
        except NotImplementedError as e:
            if isinstance(e, FunctransError):
                raise  # functrans' own (a missing rule): not Numba's limit
            _log.debug("%s: the native tier cannot compile this program (Numba's "
                       "NotImplementedError: %s); the NumPy tier runs it", self._label, e)
            return None

    def _explain_miss(self, args, kwargs, key) -> str:
        """Why this call compiles (the signature's changes since the last miss)."""
        paths, leaves, _ = tree_flatten_with_path((args, kwargs))
        signature = {
            keystr(p): (_leaf_aval(x).str_short(), type(x).__name__) for p, x in zip(paths, leaves)
        }
        if self._last_signature is None:
            reason = "first call"
        else:
            old = dict(self._last_signature)
            changed = [
                f"{p}: {old.get(p, ('absent',))[0]} -> {s[0]}"
                for p, s in signature.items() if old.get(p) != s
            ]
            changed += [f"{p}: removed" for p in old if p not in signature]
            statics = tuple((w, v) for w, v, _ in key[2])
            reason = "; ".join(changed) or f"static arguments changed: {statics}"
        self._last_signature = tuple(signature.items())
        return reason

    # -- inspection -----------------------------------------------------------------

    def lower(self, *args, device: str | None = None, **kwargs) -> Lowered:
        """Trace and optimise for these arguments (arrays or ShapeDtypeStructs)
        without running; see ``Lowered``.  ``device`` (``"cpu"`` or ``"gpu"``)
        defaults to the arguments' device; lowering for the GPU generates all
        its code (kernels included) on any machine.  (``device`` is taken by
        ``lower``, so it cannot name a keyword argument of the function.)"""
        if self._static_argnums or self._static_argnames:
            dyn_args, dyn_kwargs, _ = self._split(args, kwargs)
        else:
            dyn_args, dyn_kwargs = args, kwargs
        leaves = tree_flatten((dyn_args, dyn_kwargs))[0]
        found = check_devices(self._label, "argument ", (dyn_args, dyn_kwargs), leaves,
                              call=True)
        if device is None:
            device = found
        elif device not in ("cpu", "gpu"):
            raise DeviceError(f"{self._label}.lower: unknown device {device!r}; use 'cpu' or "
                              "'gpu'")
        avals = [_leaf_aval(x) for x in leaves]
        return Lowered(self._lower(args, kwargs, avals, device), device)

    def cache_info(self) -> CacheInfo:
        """Hits, misses and entries of this function's cache (and its
        ``evictions``, ``maxsize``, ``compile_time`` and ``native_compile_time``)."""
        with self._lock:
            slots = list(self._order.values())
            info = (self._hit_count(), self._misses, len(slots), self._evictions,
                    config.jit_cache_size, self._compile_time, self._native_time)
        return CacheInfo(*info, tuple(_tier_info(s.entry) for s in slots))

    def clear_cache(self) -> None:
        """Drop every compiled program (the next call traces again) and reset the counts."""
        with self._lock:
            self._entries.clear()
            self._fast.clear()
            self._order.clear()
            self._reset_hits()
            self._misses = self._evictions = 0
            self._compile_time = self._native_time = 0.0


def _timed(entry: _Entry, tier: tiering.Tier, args: Sequence[Any]) -> list[Any]:
    """``entry``'s program run on ``args`` and timed for the tiering rule:
    while the rule watches the NumPy tier's calls, or while the native
    tier is on trial after a move (``Tier.timed``)."""
    start = time.perf_counter()
    outs = entry.compiled.fn(*args)
    seconds = time.perf_counter() - start
    if tier.watching:
        tier.seconds += seconds
        tier.calls += 1
        if tier.seconds >= tier.threshold:
            tier.hot()
    else:
        tier.timed(seconds)
    return outs


def _laid_out_as_assumed(c_inputs: Sequence[int], leaves: Sequence[Any]) -> bool:
    """Whether the call's arguments at ``c_inputs`` are laid out as a program
    that took them to be C-contiguous assumed: C-ordered arrays (or others
    than NumPy's, whose layouts are not followed) and tracers (under a
    transform) that their traces lay out in C order."""
    for i in c_inputs:
        x = leaves[i]
        if type(x) is np.ndarray:
            if not x.flags.c_contiguous:
                return False
        elif isinstance(x, Tracer) and core.tracer_layout(x) is not None:
            return False
    return True


def _layout_words(layout: tuple[bool, tuple[int, ...]]) -> str:
    """``core.memory_layout``'s answer in words."""
    dense, axes = layout
    if not dense:
        return "with gaps (sliced with a step)"
    if list(axes) == sorted(axes, reverse=True):
        return "in F order"
    return f"with axes {axes} from the slowest to the fastest in memory"


def _layout_reason(args, kwargs) -> str:
    """Why a call compiles a program traced at its arrays (``_at_layouts``)."""
    paths, leaves, _ = tree_flatten_with_path((args, kwargs))
    laid = [f"{keystr(p)}: {_leaf_aval(x).str_short()} {_layout_words(layout)}"
            for p, x in zip(paths, leaves) if type(x) is np.ndarray
            for layout in [core.memory_layout(x)] if layout is not None]
    return "memory layout of " + ("; ".join(laid) or "traced arguments")


def _tier_info(entry: _Entry) -> TierInfo:
    signature = ", ".join(
        v.aval.str_short() + ("" if i >= len(entry.layouts) or entry.layouts[i] is None
                              else " " + _layout_words(entry.layouts[i]))
        for i, v in enumerate(entry.jaxpr.jaxpr.invars))
    tier = entry.tier
    if tier is None:
        return TierInfo(signature, "gpu", "its arguments are on the GPU")
    return TierInfo(signature, tier.name, tier.reason)


def _fuse_for_cpu(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Large float64 elementwise groups become ``fused_elementwise`` equations,
    which the NumPy backend evaluates in one numexpr pass (when numexpr is
    installed: the ``fast`` extra)."""
    if not have_numexpr() or not any(cpu_fusible(e) for e in closed.jaxpr.eqns):
        return closed
    # A group of one or two operations saves too little to pay numexpr's
    # setup (measured on the Rosenbrock Hessian at n=1000): those stay NumPy calls.
    fused = unfuse_small(fuse(closed, cpu_fusible), min_members=3)
    fused_p = core.lookup_primitive("fused_elementwise")
    if not any(e.primitive is fused_p for e in fused.jaxpr.eqns):
        return closed  # keep the original order of the equations
    return fused


class _Disabled(threading.local):
    on = False


#: ``disable_jit`` per thread, and how many threads are inside one (a jitted
#: call looks at the thread's flag only when some thread is).
_disabled = _Disabled()
_disabled_anywhere = 0
_disabled_lock = threading.Lock()


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Inside ``with disable_jit():`` jitted functions called in this thread run
    their Python function as it is: eagerly on arrays (so ``print`` shows
    values and a debugger stops inside), or traced by the enclosing
    transform.  Other threads are unaffected; ``disable_jit(False)`` turns jit
    back on in a block inside.

    >>> import functrans as ft, numpy as np
    >>> f = ft.jit(lambda x: print("running f on", x) or x * 2)
    >>> with ft.disable_jit():
    ...     f(np.arange(3))
    running f on [0 1 2]
    array([0, 2, 4])
    >>> f.cache_info().misses  # nothing was compiled
    0
    """
    global _disabled_anywhere
    saved = _disabled.on
    with _disabled_lock:
        _disabled_anywhere += 1
    _disabled.on = bool(disable)
    try:
        yield
    finally:
        _disabled.on = saved
        with _disabled_lock:
            _disabled_anywhere -= 1


#: Every jitted function, so that their programs go when debug_nans or
#: debug_infs changes (programs are generated with or without the checks);
#: the lock keeps a thread making a jitted function from changing the set
#: while another copies it.
_ALL: weakref.WeakSet[_Jitted] = weakref.WeakSet()
_ALL_lock = threading.Lock()


def _clear_all() -> None:
    with _ALL_lock:
        jitted = list(_ALL)
    for f in jitted:
        f.clear_cache()


core.on_value_checks.append(_clear_all)


def jit(
    fun: Callable,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    explain_cache_misses: bool = False,
    compiler: str | None = None,
) -> _Jitted:
    """Compile ``fun`` for each new argument signature and reuse it after.

    ``fun`` must be pure: arrays it captures (globals, closures) are copied
    when it is traced, so writing into them later does not change the
    compiled program; trace again (``clear_cache()``) to see new values.
    Results are always new arrays, never an argument, a captured array or a
    view of one, even where the optimised program simply returns its input.
    Each function keeps at most ``functrans.config.jit_cache_size`` compiled
    programs (the least recently used is dropped); calls from many threads
    are safe.  ``compiler`` picks the code generator: ``"auto"`` (the
    default: NumPy calls, and a hot program whose native form pays moves to
    the native tier on its own, compiled in the background), ``"numpy"``
    (NumPy calls only) or ``"native"`` (elementwise groups and loops
    compiled with Numba at the first call); None means
    ``functrans.config.jit_compiler``.  ``cache_info().tiers`` says where
    each program runs and why.  See docs/jit.md, "Tiers".

    >>> import functrans as ft, numpy as np
    >>> f = ft.jit(lambda x, y: np.sin(x) * y)
    >>> f(np.zeros(3), 2.0)
    array([0., 0., 0.])
    >>> f(np.ones(3), 5.0)  # same shapes and dtypes: no new compilation
    array([4.20735492, 4.20735492, 4.20735492])
    >>> f.cache_info()
    CacheInfo(hits=1, misses=1, entries=1)
    >>> w = np.ones(3)
    >>> g = ft.jit(lambda x: x * w)
    >>> _ = g(np.ones(3)); w[:] = 2.0  # after tracing: g keeps its snapshot
    >>> g(np.ones(3))
    array([1., 1., 1.])
    """
    jitted = _Jitted(fun, static_argnums, static_argnames, explain_cache_misses, compiler)
    with _ALL_lock:
        _ALL.add(jitted)
    return jitted

