"""NumPy's API on top of the functrans primitives.

Every function takes NumPy's arguments and gives NumPy's results (broadcasting,
NumPy 2 dtype promotion, 0-d arrays for 0-d results).  On plain arrays it
runs eagerly and returns ``numpy.ndarray``; on tracers it records primitives,
so it is differentiable, batchable and jittable.  ``_array_methods`` gives
tracers their array behaviour (operators, methods, indexing, ``.at``,
``__array_ufunc__``/``__array_function__``) from the same functions.
"""
