"""Jaxpr -> Jaxpr rewrites, one module per transform: ``jvp``, ``linearize``
(the known/unknown split behind reverse mode), ``transpose`` and ``dce``."""
