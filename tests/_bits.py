"""Bit-for-bit comparison of results, for tests that promise identical
numerics (another tier, another code path) rather than closeness."""

import numpy as np


def bits_equal(a, b) -> bool:
    """Same dtype, shape and bits; any NaN matches any NaN (their sign and
    payload bits may differ between code paths that NumPy itself treats as
    equivalent)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        bits = f"u{a.itemsize}"
        return bool(np.all((a.view(bits) == b.view(bits)) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


def bytes_equal(a, b) -> bool:
    """Same dtype, shape and bytes (in C order): stricter than ``bits_equal``,
    a NaN matches only a NaN of the same bits."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
