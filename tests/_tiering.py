"""Programs moved to the native tier by automatic tiering, for tests of what
the moved program computes."""

import numpy as np

import functrans as ft
from functrans import tiering


def moved(f, *args):
    """``jit(f)`` once automatic tiering has moved its program for ``args``
    (under the ``exact_tiering`` fixture, a program moves at its first call)."""
    jf = ft.jit(f)
    with np.errstate(all="ignore"):
        jf(*args)
    assert tiering.wait(120.0)
    (info,) = jf.cache_info().tiers
    assert info.tier == "native", info
    return jf

