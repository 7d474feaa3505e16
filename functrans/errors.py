"""Every error class a user of functrans can meet, in one place.

Messages follow one pattern: the user's function, the argument (position or
pytree path), what was found (shape/dtype in ``f64[3]`` form) and one concrete
next step.  The classes also derive from the builtin exception NumPy would
raise in the same situation, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

import numpy.exceptions
import numpy.linalg


class FunctransError(Exception):
    """Base class of the errors functrans raises on purpose."""


class ShapeError(FunctransError, ValueError):
    """Operand shapes that an operation cannot combine."""


class LinAlgError(FunctransError, numpy.linalg.LinAlgError):
    """A matrix a linear-algebra function cannot take (not square, too few
    axes), like NumPy's; singular and non-positive-definite matrices raise
    ``numpy.linalg.LinAlgError`` itself when the function runs."""


class DTypeError(FunctransError, TypeError):
    """An operand dtype that an operation does not accept."""


class AxisError(FunctransError, numpy.exceptions.AxisError):
    """An axis argument out of range for the operand's rank: NumPy's own
    ``AxisError`` (a ``ValueError`` and an ``IndexError``), so code written
    against NumPy's exception catches it."""


class ConcretizationError(FunctransError, TypeError):
    """A Python value (bool, int, float, len, array) was asked of a traced value."""


class MemoryLayoutError(FunctransError, ValueError):
    """A result that NumPy computes from an array's memory layout (``ravel``
    or ``reshape`` with ``order='A'`` or ``'K'``) asked of a traced array
    whose layout functrans does not know."""


class TracerConversionError(ConcretizationError):
    """A traced value that carries a derivative was converted to a Python or
    NumPy constant (``np.asarray``, ``float()``, ``math.*``, a write into a
    NumPy array): the derivative would be lost, so functrans refuses."""


class NotLinearError(FunctransError, TypeError):
    """A function given to ``linear_transpose`` (or a linear part being
    transposed) is not linear in the inputs it is transposed in."""


class LeakedTracerError(FunctransError, RuntimeError):
    """A tracer was used after the trace that made it had ended."""


class JaxprTypeError(FunctransError, TypeError):
    """A Jaxpr whose equations do not type-check against their shape rules."""


class MissingRuleError(FunctransError, NotImplementedError):
    """A transform met a primitive that lacks the rule it needs."""


class UnknownPrimitiveError(FunctransError, KeyError):
    """A primitive name that the registry does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DeviceError(FunctransError, ValueError):
    """Arrays on different devices (a CuPy and a NumPy array) in one operation,
    or an unknown device name."""


class GPUUnavailableError(FunctransError, RuntimeError):
    """The GPU backend was asked for, but CuPy or a CUDA GPU is missing."""


class KernelCompileError(FunctransError, RuntimeError):
    """A generated CUDA kernel did not compile; the message shows its source
    and the equations it came from."""


class UnboundAxisError(FunctransError, NameError):
    """A collective named an axis that no enclosing ``vmap(axis_name=...)``
    binds and that is not ``functrans.distributed.AXIS``."""


class CollectiveTimeoutError(FunctransError, TimeoutError):
    """A collective across processes waited longer than the timeout given to
    ``functrans.distributed.initialize``: another rank failed or never came."""
