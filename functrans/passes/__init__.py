"""Compiler passes over a Jaxpr: ``dce``, ``cse``, ``fold``, ``simplify``
(each driven by the primitives' own rules, importing only ``functrans.core``),
``fuse`` (elementwise groups) and ``pipeline`` (the clean-up rounds)."""
