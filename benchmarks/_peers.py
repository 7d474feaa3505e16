"""Peer libraries, measured where they are importable and never required:
JAX (x64 enabled, on the CPU), HIPS autograd and ``torch.func``.

Each loader returns the library's modules or None: when the library is
missing, when it fails to import, or when ``--no-peers`` set
``FUNCTRANS_BENCH_NO_PEERS``.  The benchmark modules add a peer's variants
only when its loader returns something, so a workload always has at least
its NumPy floor and the functrans variants.

Every peer computes the same float64 math as the floor.  JAX calls end with
``block_until_ready`` (its dispatch is asynchronous); PyTorch tensors are
created as float64 and the thread count is PyTorch's default unless
``--threads`` caps it.
"""

from __future__ import annotations

import functools
import os
from types import SimpleNamespace

#: Set (to anything) to leave every peer out.
NO_PEERS_ENV = "FUNCTRANS_BENCH_NO_PEERS"
#: Set by ``--threads N``: PyTorch's intra-op pool is capped at N on import.
THREADS_ENV = "FUNCTRANS_BENCH_THREADS"


def enabled() -> bool:
    return not os.environ.get(NO_PEERS_ENV)


@functools.cache
def _jax():
    # The comparison is CPU against CPU; the environment variable must be set
    # before jax is imported to take effect.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
    except Exception:  # noqa: BLE001  (any failure means: no peer)
        return None
    return SimpleNamespace(jax=jax, jnp=jnp, lax=jax.lax)


@functools.cache
def _autograd():
    try:
        import autograd
        import autograd.numpy as anp
    except Exception:  # noqa: BLE001
        return None
    return SimpleNamespace(autograd=autograd, anp=anp)


@functools.cache
def _torch():
    try:
        import torch
        import torch.func
    except Exception:  # noqa: BLE001
        return None
    if os.environ.get(THREADS_ENV):
        torch.set_num_threads(int(os.environ[THREADS_ENV]))
    return SimpleNamespace(torch=torch, func=torch.func)


def jax():
    """``SimpleNamespace(jax, jnp, lax)`` or None."""
    return _jax() if enabled() else None


def autograd():
    """``SimpleNamespace(autograd, anp)`` or None."""
    return _autograd() if enabled() else None


def torch():
    """``SimpleNamespace(torch, func)`` or None."""
    return _torch() if enabled() else None


def jax_ready(out):
    """Block until every array of a JAX result (a pytree) is computed."""
    j = _jax()
    return j.jax.block_until_ready(out)
