"""AutoGraph converts functions of any length (:func:`kernel_ext.autograph.source.same_code`).

The check that a function's source compiles to its code object compiles the ``def`` alone; the
module compiled it among other code. Long jumps then need an ``EXTENDED_ARG`` prefix in one and
not in the other, and inline cache sizes move jump offsets, so the comparison must look at
operations, names, constants and jump *targets* only. Functions of 1 to 200 lines, written to
a real module file and imported as users' modules are, must all convert.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from markers import quick_only

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.autograph import convert
from kernel_ext.autograph.source import find_definition

_counter = itertools.count()


def _import(tmp_path: Path, text: str) -> object:
    name = f"kx_long_source_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _straight(n: int) -> str:
    body = "\n".join(f"    y = y * {k % 7 + 1}.0 + np.sum(x) * x.mean() - {k}" for k in range(n))
    return f"import numpy as np\n\n\ndef f(x):\n    y = x\n{body}\n    return y\n"


def _loop_template(n: int) -> str:
    body = "\n".join(
        f"        u{k} = np.abs(x).sum() * {k + 1}.0 + x.mean()\n        x = x * 0.5 + u{k} * 1e-3"
        for k in range(n)
    )
    return (
        "import numpy as np\n\n\ndef relax(x):\n    udiff = np.abs(x).max()\n"
        f"    while udiff > .001:\n{body}\n        udiff = np.abs(x).max()\n    return x\n"
    )


#: Lengths of the quick subset: every one to 40 lines, then every tenth (a straight-line
#: function has no jumps, so no length in between crosses an ``EXTENDED_ARG`` threshold).
QUICK_LENGTHS = [*range(1, 41), *range(50, 201, 10), 199]


@pytest.mark.parametrize("n", quick_only(range(1, 201), QUICK_LENGTHS))
def test_straight_line_functions_of_any_length_verify(tmp_path, n):
    module = _import(tmp_path, _straight(n))
    assert find_definition(module.f).name == "f"


@pytest.mark.parametrize("n", range(1, 41))
def test_a_while_loop_template_converts_at_every_body_length(tmp_path, n):
    module = _import(tmp_path, _loop_template(n))
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.AutographWarning)
        converted = convert(module.relax)
    assert getattr(converted, "__kx_autograph__", False)


_SOLVER = '''\
import numpy as np


def solve_poisson(f, h):
    """Jacobi iterations on a 2-D grid until the update is small (a textbook solver)."""
    n, m = f.shape
    u = np.zeros_like(f)
    un = np.zeros_like(f)
    udiff = 1.0
    it = 0
    while udiff > .001:
        un[:, :] = u
        # interior update
        u[1:-1, 1:-1] = 0.25 * (
            un[1:-1, 2:]
            + un[1:-1, :-2]
            + un[2:, 1:-1]
            + un[:-2, 1:-1]
            - h * h * f[1:-1, 1:-1]
        )
        # boundary conditions: zero flux on the left and right
        u[:, 0] = u[:, 1]
        u[:, -1] = u[:, -2]
        # fixed values on top and bottom
        u[0, :] = 0.0
        u[-1, :] = 0.0
        # measure the change
        num = np.sum(np.abs(u[:] - un[:]))
        den = np.sum(np.abs(un[:]))
        if den > 0:
            udiff = num / den
        else:
            udiff = num
        it = it + 1
        # a few diagnostics, kept as users keep them
        umax = np.max(u)
        umin = np.min(u)
        spread = umax - umin
        mean = np.mean(u)
        centred = u - mean
        energy = np.sum(centred * centred)
        scale = np.sqrt(energy + 1.0)
        ratio = spread / scale
        grad_x = u[:, 1:] - u[:, :-1]
        grad_y = u[1:, :] - u[:-1, :]
        gx = np.sum(grad_x * grad_x)
        gy = np.sum(grad_y * grad_y)
        dirichlet = 0.5 * (gx + gy)
        source = np.sum(f * u) * h * h
        functional = dirichlet - source
        lap = (
            u[1:-1, 2:]
            + u[1:-1, :-2]
            + u[2:, 1:-1]
            + u[:-2, 1:-1]
            - 4.0 * u[1:-1, 1:-1]
        )
        residual = lap / (h * h) - f[1:-1, 1:-1]
        res_norm = np.sqrt(np.sum(residual * residual))
        res_max = np.max(np.abs(residual))
        weighted = res_norm * ratio + res_max * 0.0
        history = functional + weighted * 0.0
        d0 = np.sum(u[0:, :] * 1.0) - history * 0.0
        d1 = np.sum(u[1:, :] * 2.0) - history * 0.0
        d2 = np.sum(u[2:, :] * 3.0) - history * 0.0
        d3 = np.sum(u[0:, :] * 4.0) - history * 0.0
        d4 = np.sum(u[1:, :] * 5.0) - history * 0.0
        d5 = np.sum(u[2:, :] * 6.0) - history * 0.0
        d6 = np.sum(u[0:, :] * 7.0) - history * 0.0
        d7 = np.sum(u[1:, :] * 8.0) - history * 0.0
        d8 = np.sum(u[2:, :] * 9.0) - history * 0.0
        d9 = np.sum(u[0:, :] * 10.0) - history * 0.0
        d10 = np.sum(u[1:, :] * 11.0) - history * 0.0
        d11 = np.sum(u[2:, :] * 12.0) - history * 0.0
        d12 = np.sum(u[0:, :] * 13.0) - history * 0.0
        d13 = np.sum(u[1:, :] * 14.0) - history * 0.0
        if it > 500:
            udiff = 0.0
    total = np.sum(u)
    corners = u[0, 0] + u[0, -1] + u[-1, 0] + u[-1, -1]
    edges = np.sum(u[0, :]) + np.sum(u[-1, :])
    sides = np.sum(u[:, 0]) + np.sum(u[:, -1])
    inner = total - edges - sides + corners
    check = inner * 0.0
    out = u + check
    return out
'''


def test_an_84_line_solver_with_a_while_on_its_residual_converts_and_matches_numpy(tmp_path):
    module = _import(tmp_path, _SOLVER)
    assert len(_SOLVER.splitlines()) - 3 == 83  # the def and its 82 lines of body
    f = np.fromfunction(lambda i, j: np.sin(i * 0.3) * np.cos(j * 0.2), (12, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.AutographWarning)
        got = kx.function(module.solve_poisson, backend="numpy")(f, 0.1)
    want = module.solve_poisson(f, 0.1)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and got.shape == want.shape


def test_a_refused_conversion_is_not_reported_as_autograph_being_off():
    namespace: dict = {"np": np}
    exec("def clip_negative(x):\n    if np.sum(x) < 0:\n        x = -x\n    return x\n", namespace)
    f = kx.function(namespace["clip_negative"], backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", errors.AutographWarning)
        with pytest.raises(errors.TracedBoolError) as info:
            f(np.ones(3))
    message = str(info.value)
    assert "AutoGraph is off" not in message
    assert "AutoGraph is on, but it left 'clip_negative' unconverted" in message
    assert "source is not available" in message
