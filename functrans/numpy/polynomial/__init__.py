"""``functrans.numpy.polynomial``: NumPy's ``numpy.polynomial`` functions that
trace (``polynomial.polyval``, coefficients lowest power first), for
coefficients that are traced too (NumPy's own converts them with
``np.array``)."""

from functrans.numpy.polynomial import polynomial

__all__ = ["polynomial"]
