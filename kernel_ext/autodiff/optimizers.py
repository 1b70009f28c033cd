"""``kx.optimizers``: SGD, Adam and RMSprop over ``kx.Variable``\\ s (Keras's update rules).

``apply_gradients(zip(grads, vars))`` updates each variable with ``assign``-family ops, so
inside a ``kx.function`` the update is part of the graph and runs at every call. Slot
variables (momentum, moments, the step count) are created on first use, for the variables
the optimizer first sees. Inside a traced function that is during its first trace; a second
optimizer handed to the same function later would create variables in a later trace, which
``kx.function`` refuses with :class:`~kernel_ext.errors.VariableCreationError` (a
``ValueError``, as in TensorFlow's guide). The workaround is the guide's: one concrete
function per optimizer (``kx.function(step).get_concrete_function(w, x, y, opt)``).
A gradient of ``None`` leaves its variable alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..trace import Variable

# The variables the updates compute with are annotated ``Any``: ``Variable``'s arithmetic
# operators are set on the class when it is made (``NumpyOperators``), out of mypy's sight.


class Optimizer:
    """Base class: slots per variable, the step count, ``apply_gradients``."""

    def __init__(self, learning_rate: float, name: str) -> None:
        self.learning_rate = learning_rate
        self.name = name
        self.iterations: Variable | None = None
        self._slots: dict[tuple[int, str], Variable] = {}
        self._vars: list[Variable] = []  # keeps the variables keyed by id alive

    def slot(self, var: Variable, kind: str) -> Variable:
        """The ``kind`` slot of ``var`` (zeros of its shape and dtype), made on first use."""
        key = (id(var), kind)
        found = self._slots.get(key)
        if found is None:
            found = self._slots[key] = Variable(
                np.zeros(var.shape, var.dtype),
                name=f"{self.name}/{var.name}/{kind}",
                trainable=False,
            )
            self._vars.append(var)
        return found

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Variable]]) -> None:
        """Apply one update per ``(gradient, variable)`` pair, then count the step."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if self.iterations is None:
            self.iterations = Variable(np.int64(0), name=f"{self.name}/iterations", trainable=False)
        for _, var in pairs:
            self.build(var)
        iterations: Any = self.iterations
        step = iterations + 1
        for grad, var in pairs:
            self.update(var, grad, step)
        self.iterations.assign_add(1)

    def build(self, var: Variable) -> None:
        """Create ``var``'s slots (before any update, so all are made in one place)."""

    def update(self, var: Variable, grad: Any, step: Any) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Gradient descent, optionally with (Nesterov) momentum: ``v = m*v - lr*g``,
    ``w += v`` (``w += m*v - lr*g`` with ``nesterov``)."""

    def __init__(
        self,
        learning_rate: float = 0.01,
        momentum: float = 0.0,
        nesterov: bool = False,
        name: str = "SGD",
    ) -> None:
        super().__init__(learning_rate, name)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must be in [0, 1], got {momentum}")
        self.momentum = momentum
        self.nesterov = nesterov

    def build(self, var: Variable) -> None:
        if self.momentum:
            self.slot(var, "momentum")

    def update(self, var: Variable, grad: Any, step: Any) -> None:
        lr = self.learning_rate
        if not self.momentum:
            var.assign_sub(lr * grad)
            return
        v: Any = self.slot(var, "momentum")
        v.assign(self.momentum * v - lr * grad)
        if self.nesterov:
            var.assign_add(self.momentum * v - lr * grad)
        else:
            var.assign_add(v)


class Adam(Optimizer):
    """Adam (Kingma & Ba), Keras's form: ``w -= lr * sqrt(1-b2^t)/(1-b1^t) * m /
    (sqrt(v) + eps)``."""

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        name: str = "Adam",
    ) -> None:
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def build(self, var: Variable) -> None:
        self.slot(var, "m")
        self.slot(var, "v")

    def update(self, var: Variable, grad: Any, step: Any) -> None:
        m, v = self.slot(var, "m"), self.slot(var, "v")
        b1, b2 = self.beta_1, self.beta_2
        m.assign_add((grad - m) * (1.0 - b1))
        v.assign_add((grad * grad - v) * (1.0 - b2))
        alpha = self.learning_rate * np.sqrt(1.0 - b2**step) / (1.0 - b1**step)
        var.assign_sub((m * alpha / (np.sqrt(v) + self.epsilon)).astype(var.dtype))


class RMSprop(Optimizer):
    """RMSprop, Keras's form: ``a = rho*a + (1-rho)*g**2``, ``w -= lr*g/sqrt(a + eps)``
    (with ``momentum``: ``m = momentum*m + that step``, ``w -= m``)."""

    def __init__(
        self,
        learning_rate: float = 0.001,
        rho: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-7,
        name: str = "RMSprop",
    ) -> None:
        super().__init__(learning_rate, name)
        self.rho, self.momentum, self.epsilon = rho, momentum, epsilon

    def build(self, var: Variable) -> None:
        self.slot(var, "velocity")
        if self.momentum:
            self.slot(var, "momentum")

    def update(self, var: Variable, grad: Any, step: Any) -> None:
        a: Any = self.slot(var, "velocity")
        a.assign(self.rho * a + (1.0 - self.rho) * grad * grad)
        increment = self.learning_rate * grad / np.sqrt(a + self.epsilon)
        if self.momentum:
            m: Any = self.slot(var, "momentum")
            m.assign(self.momentum * m + increment)
            var.assign_sub(m)
        else:
            var.assign_sub(increment)


__all__ = ["SGD", "Adam", "Optimizer", "RMSprop"]
