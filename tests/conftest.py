"""Test-suite settings: hypothesis profiles (derandomized in CI, so runs
repeat); every Jaxpr a transform or the pass pipeline returns is type-checked
with ``check_jaxpr`` (``check_transform_outputs``, like JAX's
``jax_enable_checks``); and the ``transform_mode`` fixture that runs a
transform test module twice: as written, and with every transformed function
wrapped in ``jit``."""

import functools
import importlib
import importlib.util
import os
import sys
import types

import pytest
from hypothesis import HealthCheck, settings

import functrans
from functrans.core import ClosedJaxpr, Jaxpr, check_jaxpr
from functrans.errors import JaxprTypeError

# No program moves to the native tier on its own during the suite (it runs on two
# cores within a time budget, and a background Numba compile would slow the tests
# that time themselves): tests/api/test_tiering.py turns tiering on where it tests it,
# and FUNCTRANS_JIT_TIER_UP=measured runs the whole suite under the default rule.
if "FUNCTRANS_JIT_TIER_UP" not in os.environ:
    functrans.config.update("jit_tier_up", "never")

#: Scripts that tests/api/test_distributed.py runs under mpiexec: importing one
#: (as --doctest-modules collection would) runs it.
collect_ignore = ["api/mpi_scripts"]

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The interpreter entry points and the pass pipeline: every Jaxpr they return
# is checked.  Modules that imported one by name (``from ... import run_passes``)
# hold their own reference, so each reference in a loaded module is replaced,
# not only the defining module's.
CHECKED = (
    ("functrans.interpreters.jvp", "jvp_jaxpr"),
    ("functrans.interpreters.partial_eval", "partial_eval"),
    ("functrans.interpreters.partial_eval", "linearize_jaxpr"),
    ("functrans.interpreters.transpose", "transpose_jaxpr"),
    ("functrans.interpreters.vmap", "batch_jaxpr"),
    ("functrans.passes.pipeline", "run_passes"),
)
# Jaxprs already checked in the running test, by identity (kept alive so that
# ids stay unique): the cached transforms return the same object on every call
# of a transformed function (and for every hypothesis example that traces the
# same program), which is then checked once.  Cleared after each test, so that
# no test's arrays (a Jaxpr's consts) outlive it.
_checked: dict[int, object] = {}


def _check_outputs(name, out, given):
    """``check_jaxpr`` on each Jaxpr in ``out`` (one, or a tuple holding some)."""
    for x in out if isinstance(out, (tuple, list)) else (out,):
        if isinstance(x, (ClosedJaxpr, Jaxpr)) and id(x) not in _checked:
            try:
                check_jaxpr(x)
            except JaxprTypeError as err:
                raise JaxprTypeError(
                    f"{name} returned an ill-typed Jaxpr: {err}\nIt was given:\n{given}"
                ) from None
            _checked[id(x)] = x


def _checking(name, fn):
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        out = fn(*args, **kwargs)
        _check_outputs(name, out, args[0] if args else kwargs)
        return out

    # The cached entry points keep their cache's interface (docs read cache_info()).
    for attr in ("cache_info", "cache_clear"):
        if hasattr(fn, attr):
            setattr(checked, attr, getattr(fn, attr))
    return checked


def _holders():
    """The loaded functrans modules and test modules."""
    tests = os.path.dirname(os.path.abspath(__file__))
    for mod in list(sys.modules.values()):
        if isinstance(mod, types.ModuleType):
            name, file = vars(mod).get("__name__", ""), vars(mod).get("__file__") or ""
            if name.startswith("functrans") or file.startswith(tests):
                yield mod


@pytest.fixture(autouse=True, scope="session")
def check_transform_outputs():
    """Wrap the entry points in ``CHECKED`` for the whole session (the test
    modules are imported by then: their references are replaced too)."""
    with pytest.MonkeyPatch.context() as mp:
        for module, attr in CHECKED:
            original = getattr(importlib.import_module(module), attr)
            wrapped = _checking(f"{module}.{attr}", original)
            for mod in _holders():
                for key, value in list(vars(mod).items()):
                    if value is original:
                        mp.setattr(mod, key, wrapped)
        yield


def pytest_runtest_teardown(item):
    _checked.clear()


# The transforms that return a function; in "jit" mode that function is jitted.
_WRAPPED = ("grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian")


def _have_numba() -> bool:
    return importlib.util.find_spec("numba") is not None


@pytest.fixture(params=["eager", "jit", pytest.param("native", marks=pytest.mark.native)])
def transform_mode(request, monkeypatch):
    """Use with ``pytestmark = pytest.mark.usefixtures("transform_mode")``: the
    module's tests run once as written, once under ``jit``, and once under
    ``jit(compiler="native")`` (with ``jit_compiler`` set to "native" for the
    test's own jits too; skipped without Numba; property-based tests only
    with ``FUNCTRANS_NATIVE_TESTS=all``, since every drawn program compiles
    kernels of its own).  Tests that rely on Python control flow on traced
    values are marked ``no_jit``."""
    if request.param in ("jit", "native"):
        if request.node.get_closest_marker("no_jit"):
            pytest.skip("relies on Python control flow on values, which jit forbids")
        if request.param == "native":
            if not _have_numba():
                pytest.skip("the native tier needs Numba (pip install 'functrans[native]')")
            if getattr(request.function, "is_hypothesis_test", False) and \
                    os.environ.get("FUNCTRANS_NATIVE_TESTS") != "all":
                pytest.skip("each drawn program compiles new native kernels (minutes in all); "
                            "FUNCTRANS_NATIVE_TESTS=all runs these too")
            monkeypatch.setattr(functrans.config, "jit_compiler", "native")
        compiler = "native" if request.param == "native" else "numpy"
        for name in _WRAPPED:
            original = getattr(functrans, name)
            monkeypatch.setattr(functrans, name, _jitted(original, compiler))
    return request.param


def _jitted(transform, compiler="numpy"):
    def wrapped(*args, **kwargs):
        return functrans.jit(transform(*args, **kwargs), compiler=compiler)

    return wrapped


@pytest.fixture
def exact_tiering(monkeypatch):
    """Automatic tiering with the default exact numerics, moving a program at
    its first call (``tests/_tiering.moved`` then returns the moved function)."""
    from functrans import config, tiering

    monkeypatch.setattr(config, "jit_compiler", "auto")
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(config, "jit_tier_numerics", "exact")
    yield
    tiering.wait(120.0)


@pytest.fixture(params=["fake", pytest.param("cupy", marks=pytest.mark.gpu)])
def device(request):
    """The GPU backend on the stand-in for CuPy (tests/_gpu_fake.py), or on
    CuPy with a GPU (skipped without one); yields which of the two."""
    import _gpu_fake

    from functrans.backends import cupy as gpu

    if request.param == "cupy":
        if not gpu.gpu_available():
            pytest.skip("needs CuPy and a CUDA GPU")
        yield "cupy"
        return
    _, undo = _gpu_fake.install()
    try:
        yield "fake"
    finally:
        undo()
