"""Test-suite settings: hypothesis profiles (derandomized in CI, so runs
repeat), and the ``transform_mode`` fixture that runs a transform test module
twice: as written, and with every transformed function wrapped in ``jit``."""

import os

import pytest
from hypothesis import HealthCheck, settings

import functrans

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

# The transforms that return a function; in "jit" mode that function is jitted.
_WRAPPED = ("grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian")


@pytest.fixture(params=["eager", "jit"])
def transform_mode(request, monkeypatch):
    """Use with ``pytestmark = pytest.mark.usefixtures("transform_mode")``: the
    module's tests run once as written and once under ``jit``.  Tests that
    rely on Python control flow on traced values are marked ``no_jit``."""
    if request.param == "jit":
        if request.node.get_closest_marker("no_jit"):
            pytest.skip("relies on Python control flow on values, which jit forbids")
        for name in _WRAPPED:
            original = getattr(functrans, name)
            monkeypatch.setattr(functrans, name, _jitted(original))
    return request.param


def _jitted(transform):
    def wrapped(*args, **kwargs):
        return functrans.jit(transform(*args, **kwargs))

    return wrapped
