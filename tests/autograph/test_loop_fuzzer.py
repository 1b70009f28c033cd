"""The loop fuzzer: generated index-loop programs on every executor, bitwise eager NumPy.

``loop_programs`` writes nested ``for`` loops (constant, triangular, reversed, strided ranges;
element and slice reads and writes of arguments and of buffers the function makes, slices
bounded by loop indices; carried scalars; reductions; ``break``/``continue``; traced ``if``;
loops over a traced array's rows and ``while`` loops with data tests; float64 and float32
data) and runs them at sizes on both sides of the engine's thresholds, under four profiles:

* ``shipped``: the constants as shipped; sizes on both sides of ``loops.SHORT_RANGE`` (a
  Python range of at most that many items unrolls, a longer one is one graph loop from its
  first item), the short ones unrolled inside each other up to the unroll budget.
* ``low``: the thresholds lowered so small programs cross each of them: ``SHORT_RANGE`` (2:
  ranges of 3 items and more are graph loops), ``loops.GUARDED_UNROLL`` (iterations after a
  traced ``break``), the builtin ``sum``'s unrolled length (``py_builtins.SUM_UNROLL``), the
  whole-graph op cap (``whole_graph.MAX_OPS``: ``jit_compile`` falls back to fused
  segments), short written-out reductions (``short_sums.MAX_TERMS``/``MAX_NODES``) and the
  parallel-sum size (``SUM_PARALLEL_MIN``).
* ``unrolling``: every Python range unrolls first (``SHORT_RANGE`` past any size) and the
  unroll budget (``loops.UNROLL_NODE_BUDGET``) and ``GUARDED_UNROLL`` are lowered, so loops
  switch from unrolling to a graph loop part-way, inside nested loops.
* ``wide``: row loops over long rows at element counts around 2**15 (whole-graph tiles) and
  2**18 (parallel sums, the handover size), constants as shipped.

Each batch of programs is one function (one trace, one compile); results and the arguments
after the call must equal eager NumPy's in type, dtype, shape and every byte. A failing batch
is rerun program by program so the message shows the program. :data:`CI_BATCHES` batches per
executor and profile run by default; ``KX_LOOP_PROGRAMS=3000`` adds that many programs per
executor under the ``slow`` marker (``pytest -m slow tests/autograph/test_loop_fuzzer.py``).
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from typing import Any

import numpy as np
import pytest
from loop_programs import LoopBatch, LoopProgram, make_loop_program, make_wide_program
from markers import quick_only

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.autograph import loops, py_builtins
from kernel_ext.backends import codegen, compiler, parallel, whole_graph
from kernel_ext.passes import short_sums

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}
#: Programs per batch (one function, one compile).
BATCH = 8
#: Batches per executor and profile in the default run.
CI_BATCHES = {"shipped": 5, "low": 4, "unrolling": 3, "wide": 2}
#: Programs per executor of the opt-in slow run (0: not run).
SLOW_PROGRAMS = int(os.environ.get("KX_LOOP_PROGRAMS", "0"))

#: Sizes per profile: each program's ``n`` cycles through them.
SIZES = {"shipped": (1, 3, 6, 8, 9, 12), "low": (2, 3, 5, 7), "unrolling": (2, 3, 5, 7)}
#: (rows, columns) of the wide programs: element counts just under and over 2**15 and 2**18.
WIDE_SHAPES = ((2, 2**14 - 1), (2, 2**14 + 1), (3, 2**18 // 3), (3, 2**18 // 3 + 1))

#: Totals of this run: (profile, executor) -> programs compared.
TOTALS: Counter = Counter()


def _low_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loops, "SHORT_RANGE", 2)
    monkeypatch.setattr(loops, "UNROLL_NODE_BUDGET", 30)
    monkeypatch.setattr(loops, "GUARDED_UNROLL", 2)
    monkeypatch.setattr(py_builtins, "SUM_UNROLL", 2)
    monkeypatch.setattr(whole_graph.support, "MAX_OPS", 120)
    monkeypatch.setattr(short_sums, "MAX_TERMS", 2)
    monkeypatch.setattr(short_sums, "MAX_NODES", 8)
    monkeypatch.setattr(parallel, "SUM_PARALLEL_MIN", 16)


def programs_for(profile: str, seeds: range) -> list[LoopProgram]:
    if profile == "wide":
        return [
            make_wide_program(seed, *WIDE_SHAPES[seed % len(WIDE_SHAPES)], prefix=f"p{k}_")
            for k, seed in enumerate(seeds)
        ]
    sizes = SIZES[profile]
    return [
        make_loop_program(seed, sizes[seed % len(sizes)], prefix=f"p{k}_")
        for k, seed in enumerate(seeds)
    ]


def _kind(value: Any) -> str:
    if isinstance(value, np.generic):  # (first: np.float64 is a Python float too)
        return f"NumPy scalar {value.dtype}"
    if isinstance(value, (bool, int, float, complex)):
        return f"Python {type(value).__name__}"
    return f"array {np.asarray(value).dtype}{np.shape(value)}"


#: A Python number that a graph loop or a traced branch may change comes out as NumPy's
#: default scalar of its kind (docs/ARCHITECTURE.md, the loops' *Departures*).
_DEPARTURES = {
    ("Python int", "NumPy scalar int64"),
    ("Python float", "NumPy scalar float64"),
    ("Python bool", "NumPy scalar bool"),
}


def _compare(got: Any, want: Any, where: str) -> None:
    kinds = (_kind(want), _kind(got))
    assert kinds[0] == kinds[1] or kinds in _DEPARTURES, f"{where}: {kinds[1]} != {kinds[0]}"
    g, w = np.asarray(got), np.asarray(want)
    if g.tobytes() != w.tobytes():
        raise AssertionError(f"{where}: bits differ\n got {g!r}\nwant {w!r}")


#: Clear errors a program may raise instead of running (known limitations, counted in
#: :data:`RAISED`): a name assigned only under a traced ``if`` (a loop index after a traced
#: ``break``), which liveness analysis will leave uncarried.
#: And ``s += x`` on a NumPy scalar that a traced ``if`` (a guarded unrolled iteration) may
#: have passed through unchanged: refused as a write to an array it may alias, though eagerly
#: ``+=`` on a scalar rebinds the name (a spurious error, not a wrong result).
ALLOWED_ERRORS = (
    (ValueError, "must also be assigned in the"),
    (errors.UnsupportedOpError, "itself (an if on a traced value at"),
)

#: Programs whose last call ran through the compiled function's direct entry:
#: (profile, executor) -> count.
DIRECT: Counter = Counter()

#: Programs that raised an allowed error: (profile, executor) -> count.
RAISED: Counter = Counter()


def _allowed(error: BaseException) -> bool:
    return any(isinstance(error, kind) and text in str(error) for kind, text in ALLOWED_ERRORS)


#: Calls per batch and executor: the compiled function's cache hits run through its direct
#: entry from the third call of a signature on (``backends/whole_graph/direct.py``).
CALLS = {"jit": 3}


def run_programs(programs: list[LoopProgram], path: str) -> bool:
    """The batch of ``programs`` eagerly and on ``path``: bitwise equal, arguments too.
    Returns whether the last call ran through the compiled function's direct entry."""
    batch = LoopBatch(programs)
    eager_in = [x.copy() for x in batch.inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jit_compile's op-cap fallback note
        want = batch.function(*eager_in)
        f = kx.function(batch.function, **PATHS[path])
        for call in range(CALLS.get(path, 1)):
            traced_in = [x.copy() for x in batch.inputs]
            got = f(*traced_in)
            where = f"on {path}, call {call + 1}:\n{batch.describe()}"
            assert isinstance(got, tuple) and len(got) == len(want), where
            for k, (g, w) in enumerate(zip(got, want)):
                _compare(g, w, f"output {k} {where}")
            for k, (g, w) in enumerate(zip(traced_in, eager_in)):
                _compare(g, w, f"argument {k} after the call {where}")
    return CALLS.get(path, 1) > 2 and f._direct is not None  # (armed by the second call)


def run_batch(programs: list[LoopProgram], path: str, profile: str) -> None:
    """:func:`run_programs` on the batch; when it differs or raises an allowed error, program
    by program (the message names the one that differs; allowed errors are counted)."""
    try:
        served = run_programs(programs, path)
    except AssertionError:
        for prog in programs:
            run_programs([prog], path)
        raise
    except Exception as error:  # noqa: BLE001 -- an allowed error: find the programs
        if not _allowed(error):
            raise
        for prog in programs:
            try:
                run_programs([prog], path)
            except Exception as single:  # noqa: BLE001
                if not _allowed(single):
                    raise
                RAISED[profile, path] += 1
                continue
            TOTALS[profile, path] += 1
        return
    TOTALS[profile, path] += len(programs)
    DIRECT[profile, path] += len(programs) * served


def _profile(profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codegen, "BITWISE_ONLY", True)  # no float sums in fused kernels
    # Kernels compile in the calling thread: every call runs the executor it names (in the
    # background, the first calls would run the fused fallback while the compiler works).
    monkeypatch.setattr(compiler, "_SYNC", True)
    if profile == "low":
        _low_thresholds(monkeypatch)
    if profile == "unrolling":
        monkeypatch.setattr(loops, "SHORT_RANGE", 10**9)
        monkeypatch.setattr(loops, "UNROLL_NODE_BUDGET", 30)
        monkeypatch.setattr(loops, "GUARDED_UNROLL", 2)


#: The (profile, executor, batch) of the quick subset: each profile's first batch (every size
#: of the profile: the sizes cycle with the seed) on NumPy, and the wide programs (no compile
#: worth the name) everywhere; the other batches, and the compiled executors that take
#: minutes from a cold kernel cache, run in the full suite.
QUICK = [(profile, "numpy", 0) for profile in CI_BATCHES] + [
    ("wide", path, b) for path in PATHS for b in range(CI_BATCHES["wide"])
]


@pytest.mark.parametrize(
    "profile, path, batch",
    quick_only(
        [
            (profile, path, b)
            for profile in CI_BATCHES
            for path in PATHS
            for b in range(CI_BATCHES[profile])
        ],
        QUICK,
    ),
)
def test_generated_loop_programs_are_bitwise_numpy(profile, path, batch, monkeypatch):
    _profile(profile, monkeypatch)
    size = BATCH if profile != "wide" else 2
    run_batch(programs_for(profile, range(batch * size, (batch + 1) * size)), path, profile)
    _report(profile, path)


def _report(profile: str, path: str) -> None:
    """The totals (shown with ``-rP``): programs compared, and allowed errors raised."""
    print(
        f"loop fuzzer, {profile} on {path}: {TOTALS[profile, path]} programs bitwise NumPy, "
        f"{RAISED[profile, path]} raised an allowed error; "
        f"{DIRECT[profile, path]} served by a direct entry"
    )


#: Programs run one per function on the compiled executor (graph loops: sizes past
#: ``SHORT_RANGE``), whose cache hits the direct entry serves.
SINGLE_SEEDS = range(200, 216)


@pytest.mark.parametrize("seed", quick_only(SINGLE_SEEDS, SINGLE_SEEDS[:2]))
def test_generated_loop_programs_compiled_whole_are_numpy_on_every_call(seed, monkeypatch):
    """One program per function (a batch of eight often passes the whole-graph op cap and
    runs as fused segments): compiled as one function, called three times (the third through
    its direct entry), each call bitwise NumPy, arguments included."""
    _profile("shipped", monkeypatch)
    size = (loops.SHORT_RANGE + 1, 2 * loops.SHORT_RANGE)[seed % 2]
    program = make_loop_program(seed, size, prefix="p0_")
    try:
        served = run_programs([program], "jit")
    except Exception as error:  # noqa: BLE001 -- an allowed error is a known limitation
        if not _allowed(error):
            raise
        RAISED["single", "jit"] += 1
        return
    TOTALS["single", "jit"] += 1
    DIRECT["single", "jit"] += served
    _report("single", "jit")


@pytest.mark.slow  # (with every single program: the full suite)
def test_direct_entries_served_most_single_programs():
    """(Runs after the single programs: at least half of them reached the direct entry.)"""
    ran = TOTALS["single", "jit"]
    if ran < len(SINGLE_SEEDS) // 2:  # (a run selecting only some of them)
        pytest.skip("the single-program tests did not run in this session")
    assert DIRECT["single", "jit"] >= ran // 2, (DIRECT, ran)


#: Programs per test of the slow run (each test stays within pytest's 300 s timeout).
SLOW_CHUNK = 48

if SLOW_PROGRAMS:  # opt-in (KX_LOOP_PROGRAMS=3000): collected only when asked for

    @pytest.mark.slow
    @pytest.mark.parametrize("chunk", range(max(1, SLOW_PROGRAMS // 3 // SLOW_CHUNK)))
    @pytest.mark.parametrize("path", list(PATHS))
    @pytest.mark.parametrize("profile", ["shipped", "low", "unrolling"])
    def test_many_generated_loop_programs_are_bitwise_numpy(profile, path, chunk, monkeypatch):
        _profile(profile, monkeypatch)
        first = 10_000 + chunk * SLOW_CHUNK
        for start in range(first, first + SLOW_CHUNK, BATCH):
            run_batch(programs_for(profile, range(start, start + BATCH)), path, profile)
        _report(profile, path)


def test_generated_programs_cover_every_loop_feature():
    features: set[str] = set()
    for seed in range(CI_BATCHES["shipped"] * BATCH):
        features |= make_loop_program(seed, 4).features
    assert features >= {
        "triangular",
        "negative step",
        "nested",
        "element",
        "slice",
        "carried scalar",
        "reduction",
        "buffer",
        "traced if",
        "break",
        "continue",
        "np.empty buffer",
        "rows of a traced array",
        "traced while",
        "float32",
        "traced slice bounds",
    }, features
