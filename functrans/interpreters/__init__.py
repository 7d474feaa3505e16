"""The transforms as Jaxpr -> Jaxpr interpreters: ``jvp`` (forward mode),
``partial_eval`` (the known/linear split behind reverse mode), ``transpose``
and ``vmap``.  They import only ``functrans.core`` and the rule-driven
clean-up passes, and look every rule up on the primitive."""
