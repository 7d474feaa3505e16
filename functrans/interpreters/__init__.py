"""The transforms as Jaxpr -> Jaxpr interpreters: ``jvp`` (forward mode),
``partial_eval`` (the known/linear split behind reverse mode), ``transpose``
(the linear part run backwards), ``vmap`` (batching, and the named-axis
environment the collectives read), ``sparsity`` (the Jacobian and Hessian
patterns, found without input values) and ``structured`` (the one-hot basis
of a dense ``jacfwd``/``hessian`` kept as bands); beside them
``strong_zeros``, the zeros a selection gives its untaken branch, which
``jvp`` and ``transpose`` carry so that they stay zero.  They import only
``functrans.core`` and the rule-driven clean-up passes, and look every rule
up on the primitive."""
