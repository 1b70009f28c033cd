"""The package's exception and warning types; every message names what went wrong and the fix.

Several types inherit from two built-ins on purpose: users coming from TensorFlow catch
``TypeError`` for a signature mismatch (TF >= 2.13) while the seed guides show ``ValueError``;
:class:`InputSignatureError` is both, so either ``except`` clause works.
"""

from __future__ import annotations

__all__ = [
    "AutographWarning",
    "ConcreteFunctionArgumentError",
    "DaskUnsupportedError",
    "InputSignatureError",
    "KxError",
    "LeakedTensorError",
    "LoopUnrollError",
    "RetracingWarning",
    "StrictRetraceError",
    "SymbolicValueError",
    "TraceTypeError",
    "TracedBoolError",
    "TracingConversionError",
    "TracingRecursionError",
    "UnsupportedOpError",
    "VariableCreationError",
    "VerificationError",
]


class KxError(Exception):
    """Base class of every error raised by kernel_ext itself."""


class RetracingWarning(UserWarning):
    """A Function retraced often: each retrace runs the Python body again (slow)."""


class AutographWarning(UserWarning):
    """AutoGraph could not convert a function and runs it as-is."""


class InputSignatureError(KxError, TypeError, ValueError):
    """A call does not match the Function's ``input_signature``."""


class ConcreteFunctionArgumentError(KxError, TypeError):
    """A ConcreteFunction was called with arguments outside its one signature."""


class TracedBoolError(KxError, TypeError):
    """A traced value was used where Python needs a concrete ``bool``/``int``/``float``."""


class LeakedTensorError(KxError, TypeError):
    """A traced value escaped the trace that created it and was used afterwards."""


class TracingConversionError(KxError, TypeError):
    """NumPy (or a C extension) tried to turn a traced value into a real array."""


class TracingRecursionError(KxError, RecursionError):
    """Python recursion did not terminate while tracing (usually recursion on a traced value)."""


class LoopUnrollError(KxError, RuntimeError):
    """A Python loop that cannot be a graph loop grew the graph past AutoGraph's unroll cap."""


class UnsupportedOpError(KxError, TypeError):
    """A NumPy function or ufunc method has no graph op yet."""


class DaskUnsupportedError(KxError, TypeError):
    """A traced function cannot run on Dask arrays (a graph loop, a variable, an opaque NumPy
    call, ...); the message names the op, its line and the fix."""


class VariableCreationError(KxError, ValueError):
    """A ``kx.Variable`` was created in a trace other than the Function's first one."""


class TraceTypeError(KxError, TypeError):
    """An argument cannot be turned into a trace type (e.g. an unhashable ``set``)."""


class SymbolicValueError(KxError, AttributeError):
    """A concrete-value accessor (``.numpy()``, ``.item()``) was used on a traced value."""


class StrictRetraceError(KxError, RuntimeError):
    """A strict Function (``%%tffunction --strict``) was about to retrace; the message is the
    full explanation (which argument changed, the cost, the fix)."""


class NonDifferentiableError(KxError, LookupError):
    """A gradient was asked through an op with no gradient rule (an opaque NumPy call, a
    random draw, a graph ``while`` loop); TensorFlow raises ``LookupError`` here too."""


class VerificationError(KxError, AssertionError):
    """Verify mode (``kx.function(..., verify=True)``): a traced call's result or its effect
    on the arguments differs from eager NumPy's. The message names the function, the
    signature, the first difference (path, index, eager and traced values) and the executor;
    the attributes hold the same facts, and ``eager_result`` is eager NumPy's return value
    (the signature runs eagerly from then on)."""

    def __init__(
        self,
        message: str,
        *,
        function: str = "",
        signature: str = "",
        where: str = "",
        eager: object = None,
        traced: object = None,
        executor: str = "",
        eager_result: object = None,
    ) -> None:
        super().__init__(message)
        self.function = function
        self.signature = signature
        self.where = where
        self.eager = eager
        self.traced = traced
        self.executor = executor
        self.eager_result = eager_result
