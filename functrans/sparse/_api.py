"""The public entry points of ``functrans.sparse``: patterns, and Jacobians
and Hessians as ``scipy.sparse`` CSR arrays computed by compressed products.

A ``SparseDerivative`` finds, once per argument signature (shapes, dtypes),
the pattern (``functrans.interpreters.sparsity``), its colouring
(``_colouring``), the seed matrix of one basis sum per colour, and the jitted
program that pushes all seeds through the function at once (``vmap`` of a
``jvp``, ``vjp`` or Hessian-vector product); a call runs that program and
gathers the entries out of its result.  Like ``jit``, the cache assumes the
function is pure and bakes in what it closes over.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from functrans import api, core
from functrans.errors import ConcretizationError, DTypeError, FunctransError, ShapeError
from functrans.interpreters import sparsity
from functrans.jit import jit
from functrans.passes.dce import dce_closed
from functrans.sparse._colouring import (
    check_column_colouring,
    column_colouring,
    hessian_colouring,
    row_indices,
    star_recovery,
)

_MODES = {"jacobian": ("auto", "fwd", "rev"), "hessian": ("fwd-over-rev",)}


class SparsePlan:
    """What a ``SparseDerivative`` computed for one argument signature: the
    ``pattern`` (CSR bool), ``colours`` (one per column, or per row in
    reverse mode), ``mode`` (``"fwd"``, ``"rev"`` or ``"fwd-over-rev"``), the
    seed matrix, the compressed program and its ``compiler`` (``jit``'s)."""

    def __init__(self, pattern, colours, mode, seeds, program, compiler, gather, dtype):
        self.pattern = pattern
        self.colours = colours
        self.mode = mode
        self.seeds = seeds
        self.program = program
        self.compiler = compiler
        self.gather = gather
        self.dtype = dtype
        # The result's index arrays, made once: each call copies them (a
        # caller may edit its result's indices in place, as eliminate_zeros
        # does) and fills only ``data``.
        index = _index_dtype(pattern)
        self.indices = pattern.indices.astype(index)
        self.indptr = pattern.indptr.astype(index)

    @property
    def n_colours(self) -> int:
        return int(self.seeds.shape[0])

    def describe(self) -> str:
        m, n = self.pattern.shape
        size = m * n
        share = f" ({100 * self.pattern.nnz / size:.3g}%)" if size else ""
        return (f"{m} x {n} pattern, {self.pattern.nnz} nonzeros{share}, "
                f"{self.n_colours} colours, {self.mode}")


class SparseDerivative:
    """``jacobian(f)`` / ``hessian(f)``: call it like ``f`` to get the
    derivative as a ``scipy.sparse.csr_array``; ``plan(*args)`` shows the
    pattern, colouring and mode it uses for such arguments."""

    def __init__(self, f: Callable, argnums: int | Sequence[int], kind: str, mode: str,
                 compiler: str | None = None, sparsity: Any = None):
        self.fun = f
        self.sparsity = sparsity
        self.kind = kind
        self.name = core.fun_name(f)
        self.label = f"sparse.{kind}({self.name})"
        if mode not in _MODES[kind]:
            raise ValueError(f"{self.label}: mode must be one of {_MODES[kind]}, got {mode!r}")
        self.mode = mode
        if compiler not in (None, "numpy", "native"):
            raise ValueError(f"{self.label}: compiler must be None, 'numpy' or 'native', got "
                             f"{compiler!r}")
        if compiler == "native":
            from functrans.backends import native

            native.check_available(self.label)
        self.compiler = compiler
        self.argnums = _check_argnums(self.label, argnums)
        self._plans: dict[Any, SparsePlan] = {}
        self._last: SparsePlan | None = None
        self._lock = threading.Lock()
        self.__name__ = f"sparse_{kind}_of_{self.name}"
        self.__doc__ = getattr(f, "__doc__", None)

    def __repr__(self):
        what = self._last.describe() if self._last is not None else "not called yet"
        return f"<functrans.sparse.{self.kind} of {self.name}: {what}>"

    def __call__(self, *args):
        nums, plan = self._plan(args)
        x = _ravel_args(args, nums, plan.dtype)
        others = [a for i, a in enumerate(args) if i not in nums]
        if plan.gather.shape[0] == 0:
            data = np.zeros(0, plan.dtype)
        else:
            compressed = plan.program(x, plan.seeds, *others)
            data = np.take(compressed.reshape(-1), plan.gather).astype(plan.dtype, copy=False)
        out = sp.csr_array((data, plan.indices.copy(), plan.indptr.copy()),
                           shape=plan.pattern.shape, copy=False)
        out.has_sorted_indices = True  # (the pattern's are: no check needed later)
        return out

    def plan(self, *args) -> SparsePlan:
        """The pattern, colouring and program for arguments like ``args``."""
        return self._plan(args)[1]

    def _plan(self, args: tuple) -> tuple[tuple[int, ...], SparsePlan]:
        nums = _positions(self.label, self.argnums, len(args))
        avals = tuple(core.get_aval(a) for a in args)
        key = (nums, avals)
        found = self._plans.get(key)
        if found is None:
            with self._lock:
                found = self._plans.get(key)
                if found is None:
                    found = self._make_plan(nums, avals)
                    self._plans[key] = found
        self._last = found
        return nums, found

    def _make_plan(self, nums: tuple[int, ...], avals: tuple) -> SparsePlan:
        dtype = _check_inputs(self.label, nums, avals)
        closed = trace(self.label, self.fun, avals, hessian=self.kind == "hessian")
        sizes = [avals[i].size for i in nums]
        if self.sparsity is None:
            jac, hess = detect(self.label, closed, [i in nums for i in range(len(avals))],
                               hessian=self.kind == "hessian")
        else:  # jacobian() only: hessian() takes no pattern
            m = int(np.prod(closed.jaxpr.outvars[0].aval.shape, dtype=np.int64))
            jac = hess = given_pattern(self.label, self.sparsity, (m, int(sum(sizes))))
        shapes = [avals[i].shape for i in nums]
        dtypes = [avals[i].dtype for i in nums]
        g = _flat_function(self.fun, nums, len(avals), sizes, shapes, dtypes)
        n = int(sum(sizes))
        if self.kind == "hessian":
            pattern = hess
            colours = hessian_colouring(pattern)
            gather = star_recovery(pattern, colours) if pattern.nnz else np.zeros(0, np.int64)
            mode = "fwd-over-rev"
            seeds = _seeds(colours, n, dtype)
            products = _hvps(g)
        else:
            pattern = jac
            m = pattern.shape[0]
            mode = self.mode
            col: np.ndarray | None = None
            row: np.ndarray | None = None
            if mode in ("auto", "fwd"):
                col = column_colouring(pattern)
            if mode in ("auto", "rev"):
                row = column_colouring(_csr_bool(pattern.T))
            if mode == "auto":
                mode = "rev" if row is not None and col is not None and row.max() < col.max() \
                    else "fwd"
            if mode == "fwd":
                colours = col if col is not None else column_colouring(pattern)
                check_column_colouring(pattern, colours)
                gather = colours[pattern.indices] * m + row_indices(pattern)
                seeds = _seeds(colours, n, dtype)
                products = _jvps(g)
            else:
                colours = row if row is not None else column_colouring(_csr_bool(pattern.T))
                check_column_colouring(_csr_bool(pattern.T), colours)
                gather = colours[row_indices(pattern)] * n + pattern.indices
                seeds = _seeds(colours, m, _out_dtype(closed, dtype))
                products = _vjps(g)
        compiler = self._compiler_for(seeds)
        program = jit(products, compiler=compiler)
        return SparsePlan(pattern, colours, mode, seeds, program, compiler,
                          gather.astype(np.intp), dtype)

    def _compiler_for(self, seeds: np.ndarray) -> str:
        """The code generator of the compressed program: the one asked for;
        else the native tier where Numba is installed and the products are
        long (``NATIVE_MIN_ENTRIES`` seed entries or more: each product is a
        few passes over ``colours x n`` arrays, which one fused loop does at
        a fraction of the cost), else ``functrans.config.jit_compiler``.
        Short products keep the NumPy tier: loading Numba would cost a
        first call more than the kernels win."""
        if self.compiler is not None:
            return self.compiler
        from functrans import config
        from functrans.backends import native

        if config.jit_compiler != "native" and seeds.size >= NATIVE_MIN_ENTRIES \
                and native.available():
            return "native"
        return config.jit_compiler


#: Seed entries (colours x n) from which the compressed program is compiled by
#: the native tier when Numba is installed (``SparseDerivative._compiler_for``).
NATIVE_MIN_ENTRIES = 100_000


def _csr_bool(a):
    a = sp.csr_array(a, dtype=bool)
    a.sort_indices()
    return a


def given_pattern(label: str, sparsity: Any, shape: tuple[int, int]):
    """A pattern the user gives (a dense array or anything ``scipy.sparse``
    takes; its nonzero entries are those that may be nonzero) as a sorted
    boolean CSR array of ``shape``; stored zeros are not in it."""
    try:
        a = sp.csr_array(sparsity) if sp.issparse(sparsity) else sp.csr_array(
            np.asarray(sparsity) != 0)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{label}: sparsity must be an array or a scipy.sparse matrix, got "
                        f"{type(sparsity).__name__} ({err})") from None
    if a.shape != shape:
        raise ShapeError(f"{label}: sparsity has shape {a.shape}; the Jacobian has shape "
                         f"{shape} (rows: the output raveled, columns: the inputs raveled)")
    return _csr_bool(a != 0)


def _index_dtype(pattern) -> type:
    """int32 indices where they fit, as SciPy itself picks: half the bytes
    to copy, and no scan of the contents to choose a dtype."""
    fits = max(pattern.shape + (pattern.nnz,)) < np.iinfo(np.int32).max
    return np.int32 if fits else np.int64


def _seeds(colours: np.ndarray, n: int, dtype) -> np.ndarray:
    """One row per colour: the sum of the basis vectors of that colour."""
    k = int(colours.max()) + 1 if n else 1
    seeds = np.zeros((k, n), dtype)
    seeds[colours, np.arange(n)] = 1
    return seeds


def _out_dtype(closed, dtype):
    return closed.jaxpr.outvars[0].aval.dtype if closed.jaxpr.outvars else dtype


def _jvps(g: Callable) -> Callable:
    def compressed_jvps(x, seeds, *others):
        return api.vmap(lambda v: api.jvp(lambda y: g(y, *others), (x,), (v,))[1])(seeds)

    return compressed_jvps


def _vjps(g: Callable) -> Callable:
    def compressed_vjps(x, seeds, *others):
        _, pull = api.vjp(lambda y: g(y, *others), x)
        return api.vmap(lambda u: pull(u)[0])(seeds)

    return compressed_vjps


def _hvps(g: Callable) -> Callable:
    def compressed_hvps(x, seeds, *others):
        grad = api.grad(lambda y: g(y, *others).reshape(()))
        return api.vmap(lambda v: api.jvp(grad, (x,), (v,))[1])(seeds)

    return compressed_hvps


def _flat_function(f, nums, nargs, sizes, shapes, dtypes) -> Callable:
    """``g(x, *others)``: ``f`` with its differentiated arguments given as one
    raveled vector (C order, concatenated) and its output raveled."""
    bounds = np.cumsum([0] + list(sizes))

    def g(x, *others):
        it = iter(others)
        args = []
        for i in range(nargs):
            if i in nums:
                k = nums.index(i)
                piece = x[int(bounds[k]):int(bounds[k + 1])].reshape(shapes[k])
                args.append(piece.astype(dtypes[k]) if piece.dtype != dtypes[k] else piece)
            else:
                args.append(next(it))
        return f(*args).reshape(-1)

    return g


def trace(label: str, f: Callable, avals: Sequence[Any], hessian: bool = False):
    """``f``'s Jaxpr at ``avals`` (no values: the pattern must hold for all),
    dead code removed; errors say why a function cannot be analysed."""

    def flat(*xs):
        out = f(*xs)
        aval = core.get_aval(out) if _is_array(out) else None
        if aval is None:
            raise TypeError(f"{label}: {core.fun_name(f)} must return one array, got "
                            f"{type(out).__name__}; return a single array (stack the parts)")
        if hessian and aval.shape != ():
            raise ShapeError(f"{label}: the function must return a scalar, got "
                             f"{aval.str_short()}; sum it, or use functrans.sparse.jacobian "
                             "for the Jacobian of a vector")
        return [out]

    try:
        closed, _, _ = core.trace_to_jaxpr(flat, list(avals), name=core.fun_name(f))
    except ConcretizationError as err:
        raise ConcretizationError(
            f"{label}: the sparsity pattern is found from the program alone, without input "
            "values, but the function needs a value here, so its pattern may depend on the "
            "values. Write the branch with functrans.numpy.where or functrans.lax.cond (the "
            f"pattern then covers both branches), or use the dense transform. ({err})"
        ) from None
    return dce_closed(closed)


def detect(label: str, closed, diff: list[bool], hessian: bool = False):
    """``sparsity.detect``, its errors prefixed with the transform and function."""
    try:
        return sparsity.detect(closed, diff, hessian=hessian)
    except FunctransError as err:
        raise type(err)(f"{label}: {err}") from None


def _is_array(x) -> bool:
    return isinstance(x, (core.Tracer, np.ndarray, np.generic, int, float, bool, complex))


def _check_argnums(label: str, argnums) -> tuple[int, ...] | int:
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return int(argnums)
    if isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in argnums):
        return tuple(int(i) for i in argnums)
    raise TypeError(f"{label}: argnums must be an int or a non-empty tuple of ints, got "
                    f"{argnums!r}")


def _positions(label: str, argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else argnums
    out = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise ValueError(f"{label}: argnums value {i} is out of range for a call with "
                             f"{nargs} positional arguments")
        out.append(i % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{label}: argnums names one argument twice: {argnums!r}")
    return tuple(out)


def _check_inputs(label: str, nums: tuple[int, ...], avals: tuple) -> np.dtype:
    for i in nums:
        dt = avals[i].dtype
        if dt.kind == "c":
            raise DTypeError(
                f"{label}: argument {i} is complex ({avals[i].str_short()}); sparse "
                "derivatives take real inputs: split it into real and imaginary parts, or "
                "use the dense functrans.jacfwd(..., holomorphic=True)")
        if dt.kind != "f":
            raise DTypeError(
                f"{label}: argument {i} has dtype {dt.name} ({avals[i].str_short()}), but "
                "differentiated arguments must be floats; pass x.astype(float) or leave it "
                "out of argnums")
    return np.result_type(*[avals[i].dtype for i in nums])


def _ravel_args(args, nums, dtype) -> np.ndarray:
    parts = [np.asarray(args[i], dtype).ravel() for i in nums]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def jacobian_sparsity(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``jacobian_sparsity(f)(*args)``: the structural pattern of the Jacobian
    of ``f`` (output raveled, inputs raveled in C order and concatenated), a
    boolean ``scipy.sparse.csr_array``, found from ``f``'s program alone."""
    label = f"sparse.jacobian_sparsity({core.fun_name(f)})"
    argnums = _check_argnums(label, argnums)

    def pattern(*args):
        nums = _positions(label, argnums, len(args))
        avals = tuple(core.get_aval(a) for a in args)
        _check_inputs(label, nums, avals)
        closed = trace(label, f, avals)
        jac, _ = detect(label, closed, [i in nums for i in range(len(args))])
        return jac

    return pattern


def hessian_sparsity(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``hessian_sparsity(f)(*args)``: the structural pattern of the Hessian of
    the scalar ``f`` (inputs raveled in C order and concatenated), a
    symmetric boolean ``scipy.sparse.csr_array``."""
    label = f"sparse.hessian_sparsity({core.fun_name(f)})"
    argnums = _check_argnums(label, argnums)

    def pattern(*args):
        nums = _positions(label, argnums, len(args))
        avals = tuple(core.get_aval(a) for a in args)
        _check_inputs(label, nums, avals)
        closed = trace(label, f, avals, hessian=True)
        _, hess = detect(label, closed, [i in nums for i in range(len(args))], hessian=True)
        return hess

    return pattern


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, mode: str = "auto",
             compiler: str | None = None, sparsity: Any = None) -> SparseDerivative:
    """The Jacobian of ``f`` as a ``scipy.sparse.csr_array`` (rows: the output
    raveled; columns: the ``argnums`` inputs raveled in C order and
    concatenated), from one forward (``mode="fwd"``) or reverse (``"rev"``)
    product per colour; ``"auto"`` takes the mode with fewer colours.
    ``compiler`` is ``jit``'s, for the compressed products; None picks the
    native tier for long products where Numba is installed (docs/sparse.md).
    ``sparsity``: a pattern to use instead of the one detected from the
    program (an array or ``scipy.sparse`` matrix of the Jacobian's shape,
    nonzero where an entry may be nonzero), for a program whose detected
    pattern is wider than the truth.  It is trusted: a pattern that misses an
    entry that is not zero gives wrong values, there and in the entries of
    the columns (rows in reverse mode) that share its colour.

    >>> import functrans.sparse as fsp, numpy as np
    >>> fsp.jacobian(lambda x: x[1:] * x[:-1])(np.arange(1.0, 4.0)).toarray()
    array([[2., 1., 0.],
           [0., 3., 2.]])
    """
    return SparseDerivative(f, argnums, "jacobian", mode, compiler, sparsity)


def hessian(f: Callable, argnums: int | Sequence[int] = 0, compiler: str | None = None
            ) -> SparseDerivative:
    """The Hessian of the scalar ``f`` as a ``scipy.sparse.csr_array``, from
    one Hessian-vector product per colour of a star colouring of its pattern;
    ``compiler`` as for ``jacobian``.

    >>> import functrans.sparse as fsp, functrans.numpy as fnp, numpy as np
    >>> fsp.hessian(lambda x: fnp.sum(x[1:] * x[:-1] ** 2))(np.ones(3)).toarray()
    array([[2., 2., 0.],
           [2., 2., 2.],
           [0., 2., 0.]])
    """
    return SparseDerivative(f, argnums, "hessian", "fwd-over-rev", compiler)


def spy(pattern, rows: int = 16, cols: int = 32) -> str:
    """A text picture of a pattern: ``#`` where a block of it has a nonzero."""
    p = sp.coo_array(pattern)
    m, n = p.shape
    r, c = max(1, min(rows, m)), max(1, min(cols, n))
    grid = np.zeros((r, c), bool)
    if p.nnz:
        grid[(p.row * r) // max(m, 1), (p.col * c) // max(n, 1)] = True
    return "\n".join("".join("#" if v else "." for v in line) for line in grid)
