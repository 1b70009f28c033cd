"""Differential test on numeric edge programs: every executor reproduces NumPy's bits.

``programs.make_numeric_program`` writes short fusible programs over integer extremes (MIN,
MAX and overflow on purpose, every width), signed zeros, NaNs with payloads and NEP 50 weak
Python scalars at each width's edges, and keeps only steps whose bits NumPy itself fixes.
Each program runs eagerly and on an executor; the results must agree in type, dtype, shape
and every byte (:func:`programs.bit_pattern`). Float sums and means stay in NumPy here
(``codegen.BITWISE_ONLY``: fused float sums are within a documented bound, not bitwise).

Sizes: :data:`CI_PROGRAMS` programs per backend in the default run; set
``KX_NUMERIC_PROGRAMS=3000`` to run that many more under the ``slow`` marker
(``pytest -m slow tests/backends/test_numeric_differential.py``). The CUDA simulator runs the
same programs in ``cuda_sim_cases.py``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest
from programs import Batch, bit_pattern, make_numeric_program

import kernel_ext as kx
from kernel_ext.backends import codegen

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

#: Programs per backend in the default (CI) run.
CI_PROGRAMS = 240
#: Programs per backend of the opt-in slow run (0: not run).
SLOW_PROGRAMS = int(os.environ.get("KX_NUMERIC_PROGRAMS", "0"))
CHUNKS = 8
#: Programs traced (and, under jit_compile, compiled) together.
BATCH = 12
BACKENDS = {
    "numpy": {"backend": "numpy"},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


def _outputs(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def run_batch(seeds: list[int], backend: str) -> int:
    """:func:`run_bitwise` of ``seeds`` as one :class:`Batch`; on a failure, each program
    alone, so the message names the program that differs. Returns the outputs compared."""
    try:
        return run_bitwise(seeds, backend)
    except AssertionError:
        for seed in seeds:
            run_bitwise([seed], backend)
        raise


def run_bitwise(seeds: list[int], backend: str) -> int:
    """Run programs ``seeds`` (as one batch) eagerly and on ``backend``; assert bitwise
    equality with eager NumPy (dtype, shape, bytes) and the NumPy executor's result types (a
    scalar or a 0-d array). Returns the number of outputs compared."""
    prog = Batch([make_numeric_program(seed) for seed in seeds])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = _outputs(prog(*prog.inputs))
        ref = _outputs(kx.function(prog, backend="numpy")(*prog.inputs))
        f = kx.function(prog, **BACKENDS[backend])
        f(*prog.inputs)  # the first call compiles (synchronously in backend tests)
        got = _outputs(f(*prog.inputs))
    where = f"seeds {seeds} on {backend}: {prog.describe()}"
    assert len(got) == len(want), where
    for k, (g, w, r) in enumerate(zip(got, want, ref)):
        gb, wb = bit_pattern(g), bit_pattern(w)
        assert type(g) is type(r), f"{where} -> output {k}: {type(g)} != {type(r)}"
        assert gb[1:3] == wb[1:3], f"{where} -> output {k}: {gb[1:3]} != {wb[1:3]}"
        if gb[3] != wb[3]:
            a, b = np.asarray(g), np.asarray(w)
            raise AssertionError(
                f"{where} -> output {k}: bits differ\n got {a!r}\nwant {b!r}"
                f"\n got bits {a.tobytes().hex()}\nwant bits {b.tobytes().hex()}"
            )
    return len(got)


@pytest.fixture
def bitwise_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codegen, "BITWISE_ONLY", True)


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_numeric_edge_programs_are_bitwise_numpy(bitwise_sums, backend, chunk):
    seeds = list(range(chunk, CI_PROGRAMS, CHUNKS))
    for i in range(0, len(seeds), BATCH):
        run_batch(seeds[i : i + BATCH], backend)


if SLOW_PROGRAMS:  # opt-in (KX_NUMERIC_PROGRAMS=3000): collected only when asked for

    @pytest.mark.slow
    @pytest.mark.parametrize("backend", list(BACKENDS))
    @pytest.mark.parametrize("chunk", range(CHUNKS))
    def test_many_numeric_edge_programs_are_bitwise_numpy(bitwise_sums, backend, chunk):
        seeds = list(range(CI_PROGRAMS + chunk, CI_PROGRAMS + SLOW_PROGRAMS, CHUNKS))
        for i in range(0, len(seeds), BATCH):
            run_batch(seeds[i : i + BATCH], backend)
