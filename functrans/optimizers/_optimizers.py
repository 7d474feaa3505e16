"""The optimizers users call: each is a ``chain`` of the building blocks in
``_scaling``, ending in the learning rate, wrapped so that ``init`` refuses
integer parameters and ``update`` checks that the gradients are shaped like
the parameters, naming the optimizer in the error."""

from __future__ import annotations

from typing import Any

from functrans.optimizers import _scaling as sc
from functrans.optimizers._transformation import (
    GradientTransformation,
    chain,
    check_floating,
    check_number,
    check_structures,
    identity,
)


def _optimizer(name: str, *transforms: GradientTransformation) -> GradientTransformation:
    inner = chain(*transforms)

    def init(params):
        check_floating(f"{name}.init", params)
        return inner.init(params)

    def update(grads, state, params=None):
        check_structures(f"{name}.update", "grads", grads, params)
        return inner.update(grads, state, params)

    return GradientTransformation(init, update)


def _momentum(name: str, momentum, nesterov: bool) -> GradientTransformation:
    if momentum is None:
        if nesterov:
            raise ValueError(f"{name}: nesterov=True needs a momentum, for example momentum=0.9")
        return identity()
    # Below 1, so that the buffer, a geometric sum of past gradients, stays bounded.
    check_number(name, "momentum", momentum, 0.0, 1.0)
    return sc.trace(decay=momentum, nesterov=nesterov)


def sgd(learning_rate, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent: ``p <- p - lr * g``; with ``momentum``,
    ``b <- momentum * b + g`` and ``p <- p - lr * b`` (``nesterov``: ``p <- p
    - lr * (g + momentum * b)``), as ``torch.optim.SGD`` with
    ``dampening=0``.

    >>> import numpy as np
    >>> from functrans import optimizers as optim
    >>> opt = optim.sgd(0.1, momentum=0.9)
    >>> params = np.array([1.0, -2.0])
    >>> state = opt.init(params)
    >>> for _ in range(2):
    ...     updates, state = opt.update(2 * params, state)  # the gradient of sum(p**2)
    ...     params = optim.apply_updates(params, updates)
    >>> params
    array([ 0.46, -0.92])
    """
    return _optimizer("sgd", _momentum("sgd", momentum, nesterov),
                      sc.scale_by_learning_rate(learning_rate, name="sgd"))


def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         eps_root: float = 0.0) -> GradientTransformation:
    """Adam (Kingma and Ba): ``p <- p - lr * m_hat / (sqrt(v_hat + eps_root) +
    eps)`` with bias-corrected moment estimates (see ``scale_by_adam``);
    ``torch.optim.Adam`` is the same rule with ``eps_root=0``."""
    return _optimizer("adam", sc.scale_by_adam(b1, b2, eps, eps_root),
                      sc.scale_by_learning_rate(learning_rate, name="adam"))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0, weight_decay: float = 1e-4,
          mask: Any = None) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov and Hutter): ``p <- p -
    lr * (adam_direction + weight_decay * p)``, the rule of
    ``torch.optim.AdamW`` (whose default weight decay is 1e-2).  ``mask``
    (a pytree of bools, or a function of the params giving one) limits the
    decay to the leaves marked True, say the weights and not the biases."""
    return _optimizer("adamw", sc.scale_by_adam(b1, b2, eps, eps_root),
                      sc.add_decayed_weights(weight_decay, mask),
                      sc.scale_by_learning_rate(learning_rate, name="adamw"))


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            eps_in_sqrt: bool = True, centered: bool = False, momentum: float | None = None,
            nesterov: bool = False) -> GradientTransformation:
    """RMSProp: ``p <- p - lr * g / sqrt(v + eps)`` with ``v`` the running
    mean of ``|g|^2`` (``centered``: its running variance); ``momentum``
    accumulates those steps before the learning rate scales them.
    ``torch.optim.RMSprop(alpha=decay)`` is ``eps_in_sqrt=False``."""
    moments = (sc.scale_by_stddev if centered else sc.scale_by_rms)(
        decay, eps, initial_scale, eps_in_sqrt)
    return _optimizer("rmsprop", moments, _momentum("rmsprop", momentum, nesterov),
                      sc.scale_by_learning_rate(learning_rate, name="rmsprop"))


def adagrad(learning_rate, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformation:
    """Adagrad: ``s <- s + |g|^2`` and ``p <- p - lr * g / sqrt(s + eps)``
    (see ``scale_by_rss``); ``torch.optim.Adagrad`` divides by ``sqrt(s) +
    eps`` instead, the same rule at ``eps=0``."""
    return _optimizer("adagrad", sc.scale_by_rss(initial_accumulator_value, eps),
                      sc.scale_by_learning_rate(learning_rate, name="adagrad"))
