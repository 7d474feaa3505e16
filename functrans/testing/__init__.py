"""Helpers for testing code written with functrans.

``functrans.testing.strategies`` holds hypothesis strategies for arrays,
shapes, dtypes and pytrees of arrays, for property-based tests of your own
functions.  It is a submodule, imported on its own
(``from functrans.testing import strategies``), so that importing functrans
never imports hypothesis.
"""
