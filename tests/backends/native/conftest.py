import pytest

from functrans import config, tiering


@pytest.fixture
def exact(monkeypatch):
    """Programs move at their first call with the default exact numerics."""
    monkeypatch.setattr(config, "jit_compiler", "auto")
    monkeypatch.setattr(config, "jit_tier_up", "eager")
    monkeypatch.setattr(config, "jit_tier_numerics", "exact")
    yield
    tiering.wait(120.0)
