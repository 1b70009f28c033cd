"""Writes inside a traced ``if`` in a loop run in place: the table is not copied per iteration.

``T[i, j] = ...`` in the branches of an ``if`` inside a graph loop (dynamic programming,
clamping particles, relaxing distances) used to make each branch return a copy of the whole
table. The reinplacing pass (``backends/inplace.py``) now lets a branch write into an operand
that is owned and dead after the ``if`` but for what the ``if`` passes on. Generated
programs of that shape — a table made in the function, an argument, a copy of one; ``if``,
``if/else``, ``if/elif/else``; a second table written in one branch; a carried count; an
element read before the ``if`` and used after it, a second name for the table — run on every
executor at sizes on both sides of ``loops.SHORT_RANGE`` (8 items: shorter ranges unroll),
with data that takes both branches, and must equal eager NumPy bit for bit, arguments after the call
included.
"""

from __future__ import annotations

import copy
import importlib.util
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from markers import cheap_paths

import kernel_ext as kx
from kernel_ext.autograph import loops
from kernel_ext.backends.inplace import plan_inplace
from kernel_ext.ir import OpKind

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}
#: The paths as parameters: the compiling ones (a whole graph per program) in the full suite.
PATH_PARAMS = cheap_paths(PATHS)
#: Table sides below and above ``loops.SHORT_RANGE`` (the loops run ``n`` items; shorter
#: ones unroll — small sizes, as unrolled code compiles slowly); ``lcs`` runs at it.
SIZES = (2, 3, 9, 12)
PROGRAMS = 10


def make_program(seed: int) -> tuple[str, dict[str, bool]]:
    """Source of ``f(a, b, T0)`` (``a``, ``b``: small-integer vectors, ``T0``: a table
    argument) and the features it has."""
    rng = np.random.default_rng(seed)

    def pick(options):
        return options[int(rng.integers(len(options)))]

    init = pick(
        [
            "np.zeros((a.shape[0] + 1, b.shape[0] + 1))",
            "T0",
            "T0.copy()",
            "np.full((a.shape[0] + 1, b.shape[0] + 1), 0.5)",
        ]
    )
    shape = pick(["if/else", "if", "if/elif/else"])
    second = bool(rng.integers(2))  # a second table written in one branch
    count = bool(rng.integers(2))  # a carried scalar updated in a branch
    keeps = pick(["none", "none", "old", "alias"])  # the table read across the if
    reread = bool(rng.integers(2))  # a branch reads the element it just wrote
    cmp = pick(["==", "<"])
    lines = [f"T = {init}", "U = np.zeros(b.shape[0] + 1)", "s = 0.0"]
    if keeps == "alias":
        lines.append("S = T")
    lines += ["for i in range(1, a.shape[0] + 1):", "    for j in range(1, b.shape[0] + 1):"]
    body = []
    if keeps == "old":
        body.append("old = T[i, j]")
    then = ["T[i, j] = T[i - 1, j - 1] + 1.0"]
    if reread:
        then.append("T[i, j] = T[i, j] * 0.5 + a[i - 1]")
    if count:
        then.append("s = s + 1.0")
    other = ["T[i, j] = max(T[i - 1, j], T[i, j - 1])"]
    if second:
        other.append("U[j] = U[j - 1] + T[i, j]")
    body.append(f"if a[i - 1] {cmp} b[j - 1]:")
    body += ["    " + t for t in then]
    if shape == "if/elif/else":
        body.append("elif a[i - 1] > b[j - 1] + 1.0:")
        body.append("    T[i, j] = -T[i, j - 1]")
    if shape != "if":
        body.append("else:")
        body += ["    " + t for t in other]
    if keeps == "old":
        body.append("s = s + old")
    lines += ["        " + b for b in body]
    out = "T, U, s, S" if keeps == "alias" else "T, U, s"
    lines.append(f"return {out}")
    source = "def f(a, b, T0):\n" + textwrap.indent("\n".join(lines), "    ") + "\n"
    return source, {
        "second": second,
        "count": count,
        "keeps": keeps == "old",
        "alias": keeps == "alias",
        "argument": init == "T0",
        "shape": shape,
    }


_DIR: list[Path] = []


def compile_program(source: str, seed: int):
    """``f`` of ``source``, loaded from a real file (AutoGraph converts what it can read)."""
    if not _DIR:
        _DIR.append(Path(tempfile.mkdtemp(prefix="kx-branch-programs-")))
    name = f"branch_program_{seed}"
    path = _DIR[0] / f"{name}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.f


def inputs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Data under which the test ``a[i] == b[j]`` (and ``<``) holds for some pairs and not
    for others: both branches are taken."""
    rng = np.random.default_rng(1000 + seed)
    while True:
        a = rng.integers(0, 3, n).astype(np.float64)
        b = rng.integers(0, 3, n + 1).astype(np.float64)
        eq = a[:, None] == b[None, :]
        lt = a[:, None] < b[None, :]
        if 0 < eq.sum() < eq.size and 0 < lt.sum() < lt.size:
            return a, b, rng.standard_normal((n + 1, n + 2))


def bits(x) -> tuple:
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def check(fn, args, path: str):
    """Two calls on fresh copies (the second reuses the executor): results and arguments
    after the call equal eager NumPy's to the bit."""
    traced = kx.function(fn, **PATHS[path])
    for k in range(2):
        call = tuple(a + k for a in args)
        eager, mine = copy.deepcopy(call), copy.deepcopy(call)
        want = fn(*eager)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = traced(*mine)
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert bits(g) == bits(w), (k, w, g)
        for e, m in zip(eager, mine):
            assert bits(m) == bits(e), (k, e, m)
    return traced


def branch_setitems(graph, in_loop: bool = False) -> list:
    """The ``setitem`` nodes inside the branches of ``cond``s inside graph loops (a branch
    outside any loop — the first item, traced before the loop — writes an argument the
    plan does not own here: it copies)."""
    found = []
    for node in graph.nodes:
        if node.op is OpKind.COND:
            for g in node.params["branches"]:
                if in_loop:
                    found += [n for n in g.nodes if n.op is OpKind.SETITEM]
                found += branch_setitems(g, in_loop)
        if node.op is OpKind.WHILE:
            found += branch_setitems(node.params["body"], True)
    return found


def test_shapes_cross_the_unroll_threshold():
    assert min(SIZES) <= loops.SHORT_RANGE < max(SIZES)
    assert len(LCS_AT_THRESHOLD[0]) == loops.SHORT_RANGE


def test_generated_programs_cover_every_shape():
    feats = [make_program(seed)[1] for seed in range(PROGRAMS)]
    assert {f["shape"] for f in feats} == {"if/else", "if", "if/elif/else"}
    for key in ("second", "count", "keeps", "alias", "argument"):
        assert {f[key] for f in feats} == {True, False}, key


@pytest.mark.parametrize("path", PATH_PARAMS)
@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_generated_branch_writes_in_loops_are_bitwise_numpy(seed, path):
    source, _ = make_program(seed)
    fn = compile_program(source, seed)
    for n in (SIZES[seed % 2], SIZES[2 + seed % 2]):  # one size each side of SHORT_RANGE
        try:
            check(fn, inputs(seed, n), path)
        except AssertionError as e:
            raise AssertionError(f"n={n}, path={path}\n{source}") from e


def steps(graph):
    return [((n,), n.inputs) for n in graph.nodes]


@pytest.mark.parametrize("seed", [s for s in range(PROGRAMS) if not make_program(s)[1]["keeps"]])
def test_branch_writes_of_a_private_table_are_planned_in_place(seed):
    source, _ = make_program(seed)
    fn = compile_program(source, seed)
    a, b, t0 = inputs(seed, 9)
    graph = kx.function(fn, backend="numpy").get_concrete_function(a, b, t0).graph
    writes = branch_setitems(graph)
    assert writes
    plan = plan_inplace(graph, steps)
    # (a second name for the table, ``S = T``, is the same array: still in place)
    assert all(w in plan.writes for w in writes)


def lcs(a, b):
    n, m = a.shape[0], b.shape[0]
    T = np.zeros((n + 1, m + 1), np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                T[i, j] = T[i - 1, j - 1] + 1
            else:
                T[i, j] = max(T[i - 1, j], T[i, j - 1])
    return T[n, m], T


def test_the_compiled_table_loop_allocates_nothing_per_iteration():
    a = np.array([1, 0, 2, 1, 1, 0, 2, 2, 1, 0, 1])
    b = np.array([0, 1, 1, 2, 0, 1, 2, 1, 0, 0])
    f = check(lcs, (a, b), "jit")
    source = f.get_concrete_function(a, b).executable.run.__globals__["_H"].ksrc.source
    loop = source.split("while True:", 1)[1]
    assert "np.empty(" not in loop and ".copy()" not in loop and "_assign" not in loop


def clamp(pos, vel):
    for t in range(3):
        for i in range(pos.shape[0]):
            pos[i] += vel[i]
            if pos[i] < 0.0:
                pos[i] = -pos[i]
                vel[i] = -vel[i]
            elif pos[i] > 1.0:
                pos[i] = 2.0 - pos[i]
                vel[i] = -vel[i]
    return pos, vel


@pytest.mark.parametrize("path", PATH_PARAMS)
@pytest.mark.parametrize("n", [3, 9, 20])
def test_two_arguments_written_in_nested_branches_match_numpy(path, n):
    rng = np.random.default_rng(n)
    pos = rng.random(n)
    vel = rng.standard_normal(n) * 0.7  # some bounce off 0, some off 1, some do not
    check(clamp, (pos, vel), path)


def relax(D):
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if D[i, k] + D[k, j] < D[i, j]:
                    D[i, j] = D[i, k] + D[k, j]
    return D


@pytest.mark.parametrize("path", PATH_PARAMS)
@pytest.mark.parametrize("n", [2, 9])
def test_an_argument_relaxed_in_a_branch_matches_numpy(path, n):
    rng = np.random.default_rng(n)
    check(relax, (rng.random((n, n)) * 10,), path)


def returned_before_the_write(x):
    T = np.zeros(x.shape[0])
    before = T
    kept = T + 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            T[i] = x[i]
        else:
            T[i] = -1.0
        kept = kept + T[i]
    return before, kept


@pytest.mark.parametrize("path", PATH_PARAMS)
def test_a_table_also_bound_to_another_name_shows_the_writes(path):
    check(returned_before_the_write, (np.linspace(-1.0, 1.0, 11),), path)


#: Rows of the table loop: exactly ``loops.SHORT_RANGE`` (the outer range unrolls, the inner
#: one, one item longer, is a graph loop).
LCS_AT_THRESHOLD = (np.array([1, 0, 2, 1, 1, 0, 2, 2]), np.array([0, 1, 1, 2, 0, 1, 2, 1, 0]))


@pytest.mark.parametrize("path", PATH_PARAMS)
def test_a_table_loop_at_the_unroll_threshold_matches_numpy(path):
    check(lcs, LCS_AT_THRESHOLD, path)


def test_an_argument_written_in_unrolled_branches_enters_and_is_stored_once():
    # n = 3: every loop unrolls, so the ifs are at the top level of the compiled function,
    # where the argument enters once and is stored back once at the end; nothing in it can
    # signal, so it enters as the caller's own array (no copy at all)
    D = np.random.default_rng(3).random((3, 3)) * 10
    f = check(relax, (D,), "jit")
    source = f.get_concrete_function(D).executable.run.__globals__["_H"].ksrc.source
    graph = source.split("\ndef graph(", 1)[1]
    assert graph.count(".copy()") == 0 and graph.count("np.ascontiguousarray(p0)") == 1
    assert graph.count("_store_back2(p0, ") == 1 and graph.count("_assign") == 0


def write_then_read(x, k):
    x[0] = 5.0
    if x[1] > 0:
        x[2] = -x[2]
    else:
        x[3] = 1.0
    return x[k]


@pytest.mark.parametrize("path", PATH_PARAMS)
@pytest.mark.parametrize("k", [4, 9])
def test_an_index_error_after_branch_writes_leaves_the_argument_as_numpy_does(path, k):
    traced = kx.function(write_then_read, **PATHS[path])
    for sign in (1.0, -1.0):  # both branches
        x = np.arange(6.0) * sign
        xe, xs = x.copy(), x.copy()
        try:
            want = write_then_read(xe, np.int64(k))
        except IndexError as e:
            with pytest.raises(IndexError, match=str(e).split(" is ")[0]):
                traced(xs, np.int64(k))
        else:
            assert bits(traced(xs, np.int64(k))) == bits(want)
        assert bits(xs) == bits(xe)
