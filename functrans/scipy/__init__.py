"""SciPy's API on top of functrans, differentiable and batchable:
``functrans.scipy.linalg`` (triangular, Cholesky and LU solves, ``expm``)
and ``functrans.scipy.special`` (``logsumexp``, ``softmax``, ``erf``,
``gammaln`` ...).

Importing these modules does not import SciPy.  The linear algebra needs
no SciPy (it uses SciPy's LAPACK LU when SciPy is installed, and its own
otherwise); the special functions erf, erfc, erfinv, gammaln, digamma and
polygamma evaluate with SciPy when they run on NumPy arrays, so they need
the optional extra: ``pip install functrans[scipy]``.
"""

from functrans.scipy import linalg, special  # noqa: F401

__all__ = ["linalg", "special"]
