"""Differential tests: the optimised graph computes, bit for bit, what the traced graph does.

Two program sources: ``programs.make_program`` (random NumPy programs: dtypes, 0-d and size-0
shapes, broadcasting, weak literals, non-contiguous and read-only inputs) and
:func:`make_rich_program`, which mixes those steps with compound steps every pass has work in
(foldable constants, ``x * 1``-style no-ops, repeated subexpressions), so that the passes do
fire and the node counts must drop.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from passes_support import array_inputs, assert_identical, trace_raw
from programs import Program, _candidate, _random_array, make_program

import kernel_ext as kx
from kernel_ext.ir import OpGroup, interpret
from kernel_ext.passes import prune, run_pipeline

SEEDS = range(300)
RICH_SEEDS = range(200)


def _neutral(value: Any, kind: str) -> Any:
    """A literal that is a no-op for ``value``'s dtype: ``one`` for ``*``, ``zero`` for ``+``."""
    dtype = np.dtype(value.dtype)  # arrays, NumPy scalars and traced values all have one
    if dtype == np.bool_:
        return kind == "one"
    if dtype.kind == "f":
        return 1.0 if kind == "one" else -0.0  # x + (-0.0) is exact, x + 0.0 is not
    return 1 if kind == "one" else 0


# Compound steps: each contains work for at least one pass inside it (not at its output).
RICH: list[tuple[str, Callable[[Any], Any]]] = [
    ("tanh(v) + tanh(v)", lambda v: np.tanh(v) + np.tanh(v)),
    ("sin(v * one)", lambda v: np.sin(v * _neutral(v, "one"))),
    ("cos((v + zero) * one) ", lambda v: np.cos((v + _neutral(v, "zero")) * _neutral(v, "one"))),
    ("exp(ones_like(v) * 2) + v", lambda v: np.exp(np.ones_like(v) * 2) + v),
    ("abs(v.astype(v.dtype))", lambda v: np.abs(v.astype(v.dtype))),
    (
        "sqrt(abs(transpose(transpose(v))))",
        lambda v: np.sqrt(np.abs(np.transpose(np.transpose(v)))),
    ),
    ("maximum(v, v) - zeros_like(v) * 3", lambda v: np.maximum(v, v) - np.zeros_like(v) * 3),
    ("sum(tanh(v)) * mean(tanh(v))", lambda v: np.sum(np.tanh(v)) * np.mean(np.tanh(v))),
]


def make_rich_program(seed: int, n_steps: int = 8) -> Program:
    """A random program whose every step is an output, half of them compound steps."""
    rng = np.random.default_rng(10_000 + seed)
    inputs = [_random_array(rng) for _ in range(int(rng.integers(1, 3)))]
    prog = Program(inputs)
    env: list[Any] = list(inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for attempt in range(100):
            if len(prog.steps) >= n_steps:
                break
            if attempt == 0 or rng.random() < 0.5:
                label, fn = RICH[rng.integers(len(RICH))]
                i = int(rng.integers(len(env)))
                name, step = f"{label} [v=v{i}]", (lambda e, fn=fn, i=i: fn(e[i]))
            else:
                name, step = _candidate(rng, env)
            try:
                value = step(env)
            except Exception:
                continue
            if np.size(value) > 10_000:
                continue
            prog.steps.append((name, step))
            env.append(value)
    prog.n_outputs = len(prog.steps)
    return prog


def _check(prog: Program, where: str) -> tuple[int, int]:
    """Optimise the traced graph (verified between passes), compare it with the traced graph
    and with eager NumPy; return the op counts (prune only, full pipeline)."""
    inputs = array_inputs(prog.inputs)
    raw = trace_raw(prog, *prog.inputs)
    text = str(raw)
    optimised = run_pipeline(raw, verify=True)
    assert str(raw) == text, f"{where}: a pass changed its input graph"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = interpret(raw, inputs)
        got = interpret(optimised, inputs)
        eager = prog(*prog.inputs)
        f = kx.function(prog)
        compiled = f(*prog.inputs)
    assert len(got) == len(want) == len(eager) == len(compiled), where
    for k, (g, w, e, c) in enumerate(zip(got, want, eager, compiled)):
        assert_identical(g, w, f"{where} -> output {k} (optimised vs traced graph)")
        assert_identical(c, e, f"{where} -> output {k} (kx.function vs NumPy)")
    for out, given in ((c, x) for c in compiled for x in prog.inputs):
        if isinstance(out, np.ndarray) and isinstance(given, np.ndarray):
            assert not np.shares_memory(out, given) or _views_input(prog), (
                f"{where}: a result shares memory with an input"
            )
    return run_pipeline(raw, (prune,)).count_ops(), optimised.count_ops()


def _views_input(prog: Program) -> bool:
    # Programs whose steps are views in NumPy too (v[0], reshape, transpose) may share.
    return any(
        name.startswith(("reshape", "transpose", "expand_dims")) or "[" in name
        for name, _ in prog.steps
    )


@pytest.mark.parametrize("chunk", range(10))
def test_optimised_graphs_agree_bitwise_on_generated_programs(chunk):
    for seed in SEEDS[chunk::10]:
        prog = make_program(seed)
        _check(prog, f"seed {seed}: {prog.describe()}")


@pytest.mark.parametrize("chunk", range(5))
def test_passes_fire_on_programs_rich_in_constants_and_repeats(chunk):
    for seed in RICH_SEEDS[chunk::5]:
        prog = make_rich_program(seed)
        where = f"rich seed {seed}: {prog.describe()}"
        pruned_only, optimised = _check(prog, where)
        assert optimised < pruned_only, where


def test_concrete_function_reports_traced_and_optimised_counts():
    prog = make_rich_program(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf = kx.function(prog).get_concrete_function(*prog.inputs)
    raw = trace_raw(prog, *prog.inputs)
    assert cf.node_counts["traced"] == raw.count_ops()
    assert cf.node_counts["optimised"] == cf.graph.count_ops() < raw.count_ops()


def test_stateful_sequences_are_untouched(capsys):
    v = kx.Variable(np.zeros(3, np.float32), name="counter")

    def step(x):
        before = v.read_value() * 1.0
        v.assign(x * 1.0)
        middle = v.read_value() + -0.0
        v.assign_add(x)
        after = v.read_value()
        kx.print("after", after)
        kx.print("after", after)
        return before, middle, after, v.read_value() - before

    x = np.array([1.0, 2.0, 3.0], np.float32)
    raw = trace_raw(step, x)
    v.assign(np.zeros(3, np.float32))
    capsys.readouterr()
    f = kx.function(step)
    optimised = f.get_concrete_function(x).graph

    def stateful(graph):
        return [
            (n.op.value, n.params.get("variable"))
            for n in graph.nodes
            if n.op.group is OpGroup.STATEFUL
        ]

    assert stateful(optimised) == stateful(raw)
    assert [n.op.value for n in optimised.nodes].count("read_variable") == 4
    for call in range(3):
        start = np.asarray(v.numpy()).copy()
        before, middle, after, delta = f(x)
        assert_identical(before, start)
        assert_identical(middle, x)
        assert_identical(after, 2 * x)
        assert_identical(delta, 2 * x - start)
        assert not np.shares_memory(middle, v.numpy())
    assert capsys.readouterr().out == "after [2. 4. 6.]\n" * 6
