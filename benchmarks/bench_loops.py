"""Index-loop kernels: ``kx.function`` against eager NumPy and hand-written Numba loops.

    python benchmarks/bench_loops.py            # the default sizes
    python benchmarks/bench_loops.py --quick    # small sizes (a few minutes on a quiet core)
    python benchmarks/bench_loops.py --only lu,crc32 --paths auto

Each kernel is an index loop as people write them in NumPy (PolyBench-like linear algebra
and stencils, dynamic programming, recurrences, bit loops, particle updates). The same
Python function runs three ways: eagerly (the NumPy baseline: the loop in Python on NumPy
arrays), through ``kx.function`` (``backend="auto"`` and ``jit_compile=True``), and as the
hand-written Numba version: the loop compiled with ``@numba.njit`` (scalar loops are what a
hand ``@njit`` loop is). Per kernel and path the table shows

* ``first``: the first call's seconds (trace, optimise, compile: everything that blocks);
* ``vs numpy``: eager NumPy's time over this path's (above 1: faster than NumPy);
* ``vs numba``: the hand Numba loop's time over this path's (above 1: faster than Numba);
* ``bits``: whether the results and the arguments after the call are NumPy's, bitwise
  (``~`` where they differ within 1e-12 relative: a float sum reordered, see
  docs/backends.md; ``x`` otherwise, ``err`` when the path raised).

Times are the best of several calls after warm-up (the background compiles finished and
``auto``'s tiering trial run: ``_warm_up``), each call on fresh copies of the
inputs (the kernels update arguments in place). Hand Numba and the kx paths are timed in
interleaved rounds, one call of each per round (``_best_interleaved``), so that each meets
the same state of the machine; eager NumPy, the slow baseline, is timed before them.
Geomeans over the kernels that ran close the table. Measure on a quiet machine: a ratio
taken while other work runs flatters the slower contender.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# the kernel_ext of this checkout, not another one installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# -- linear algebra (PolyBench-like) -----------------------------------------------------------


def gemm(C, A, B):
    n, m = C.shape
    p = A.shape[1]
    for i in range(n):
        for j in range(m):
            C[i, j] *= 0.5
        for k in range(p):
            for j in range(m):
                C[i, j] += 1.5 * A[i, k] * B[k, j]
    return C


def gemver(A, u1, v1, u2, v2, y, z):
    n = A.shape[0]
    x = np.zeros(n)
    w = np.zeros(n)
    for i in range(n):
        for j in range(n):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(n):
        for j in range(n):
            x[i] = x[i] + 1.2 * A[j, i] * y[j]
    for i in range(n):
        x[i] = x[i] + z[i]
    for i in range(n):
        for j in range(n):
            w[i] = w[i] + 1.5 * A[i, j] * x[j]
    return x, w


def gesummv(A, B, x):
    n = A.shape[0]
    y = np.zeros(n)
    for i in range(n):
        t = 0.0
        s = 0.0
        for j in range(n):
            t += A[i, j] * x[j]
            s += B[i, j] * x[j]
        y[i] = 1.5 * t + 1.2 * s
    return y


def syrk(C, A):
    n, m = A.shape
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= 1.2
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += 1.5 * A[i, k] * A[j, k]
    return C


def syr2k(C, A, B):
    n, m = A.shape
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= 1.2
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += A[j, k] * 1.5 * B[i, k] + B[j, k] * 1.5 * A[i, k]
    return C


def trmm(A, B):
    m, n = B.shape
    for i in range(m):
        for j in range(n):
            for k in range(i + 1, m):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = 1.5 * B[i, j]
    return B


def atax(A, x):
    m, n = A.shape
    y = np.zeros(n)
    tmp = np.zeros(m)
    for i in range(m):
        for j in range(n):
            tmp[i] += A[i, j] * x[j]
        for j in range(n):
            y[j] += A[i, j] * tmp[i]
    return y


def bicg(A, p, r):
    m, n = A.shape
    s = np.zeros(n)
    q = np.zeros(m)
    for i in range(m):
        for j in range(n):
            s[j] += r[i] * A[i, j]
            q[i] += A[i, j] * p[j]
    return s, q


def mvt(A, x1, x2, y1, y2):
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            x1[i] += A[i, j] * y1[j]
    for i in range(n):
        for j in range(n):
            x2[i] += A[j, i] * y2[j]
    return x1, x2


def cholesky(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
        for k in range(i):
            A[i, i] -= A[i, k] * A[i, k]
        A[i, i] = np.sqrt(A[i, i])
    return A


def lu(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]
    return A


def trisolv(L, b):
    n = L.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]
    return x


def durbin(r):
    n = r.shape[0]
    y = np.zeros(n)
    z = np.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        s = 0.0
        for i in range(k):
            s += r[k - i - 1] * y[i]
        alpha = -(r[k] + s) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha
    return y


def gramschmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for k in range(n):
        nrm = 0.0
        for i in range(m):
            nrm += A[i, k] * A[i, k]
        R[k, k] = np.sqrt(nrm)
        for i in range(m):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = 0.0
            for i in range(m):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(m):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]
    return Q, R


def sparse_matvec(data, cols, ptr, x):
    n = ptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(ptr[i], ptr[i + 1]):
            s += data[k] * x[cols[k]]
        y[i] = s
    return y


# -- stencils ---------------------------------------------------------------------------------


def jacobi_1d(A, B):
    n = A.shape[0]
    for _t in range(20):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
    return A


def jacobi_2d(A, B):
    n = A.shape[0]
    for _t in range(4):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])
    return A


def seidel_2d(A):
    n = A.shape[0]
    for _t in range(2):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (
                    A[i - 1, j - 1]
                    + A[i - 1, j]
                    + A[i - 1, j + 1]
                    + A[i, j - 1]
                    + A[i, j]
                    + A[i, j + 1]
                    + A[i + 1, j - 1]
                    + A[i + 1, j]
                    + A[i + 1, j + 1]
                ) / 9.0
    return A


def gauss_seidel_1d(x, b):
    n = x.shape[0]
    for _sweep in range(10):
        for i in range(1, n - 1):
            x[i] = 0.5 * (b[i] + x[i - 1] + x[i + 1]) * 0.5
    return x


def fdtd_1d(ex, hy):
    n = ex.shape[0]
    for t in range(16):
        ex[0] = float(t)
        for i in range(1, n):
            ex[i] = ex[i] - 0.5 * (hy[i] - hy[i - 1])
        for i in range(n - 1):
            hy[i] = hy[i] - 0.7 * (ex[i + 1] - ex[i])
    return ex, hy


# -- dynamic programming --------------------------------------------------------------------


def floyd_warshall(D):
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if D[i, k] + D[k, j] < D[i, j]:
                    D[i, j] = D[i, k] + D[k, j]
    return D


def lcs_length(a, b):
    n, m = a.shape[0], b.shape[0]
    T = np.zeros((n + 1, m + 1), np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                T[i, j] = T[i - 1, j - 1] + 1
            else:
                T[i, j] = max(T[i - 1, j], T[i, j - 1])
    return T[n, m]


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), np.int64)
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + cost)
    return D[n, m]


def knapsack(weights, values, capacity):
    n = weights.shape[0]
    best = np.zeros(capacity.shape[0], np.int64)
    for i in range(n):
        for c in range(capacity.shape[0] - 1, weights[i] - 1, -1):
            cand = best[c - weights[i]] + values[i]
            if cand > best[c]:
                best[c] = cand
    return best


# -- recurrences ------------------------------------------------------------------------------


def iir_filter(x):
    y = np.zeros_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = 0.9 * y[i - 1] + 0.1 * x[i]
    return y


def prefix_sum(x):
    out = np.empty_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        out[i] = s
    return out


def logistic_map(r):
    out = np.empty_like(r)
    for i in range(r.shape[0]):
        x = 0.5
        for _t in range(50):
            x = r[i] * x * (1.0 - x)
        out[i] = x
    return out


def horner(coef, xs):
    out = np.zeros_like(xs)
    for i in range(xs.shape[0]):
        acc = 0.0
        for k in range(coef.shape[0]):
            acc = acc * xs[i] + coef[k]
        out[i] = acc
    return out


# -- bit loops --------------------------------------------------------------------------------


def crc32(data):
    crc = np.uint32(0xFFFFFFFF)
    for i in range(data.shape[0]):
        crc = crc ^ np.uint32(data[i])
        for _b in range(8):
            mask = np.uint32(0) - (crc & np.uint32(1))
            crc = (crc >> np.uint32(1)) ^ (np.uint32(0xEDB88320) & mask)
    return ~crc


def popcounts(words):
    out = np.zeros(words.shape[0], np.int64)
    for i in range(words.shape[0]):
        w = words[i]
        c = 0
        for b in range(32):
            c += (w >> b) & 1
        out[i] = c
    return out


def xorshift_stream(seeds):
    out = np.empty_like(seeds)
    for i in range(seeds.shape[0]):
        s = seeds[i]
        for _t in range(16):
            s ^= s << np.uint64(13)
            s ^= s >> np.uint64(7)
            s ^= s << np.uint64(17)
        out[i] = s
    return out


# -- particles --------------------------------------------------------------------------------


def nbody_step(pos, vel):
    n = pos.shape[0]
    acc = np.zeros_like(pos)
    for i in range(n):
        for j in range(n):
            if i != j:
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                r2 = dx * dx + dy * dy + 0.01
                inv = 1.0 / (r2 * np.sqrt(r2))
                acc[i, 0] += dx * inv
                acc[i, 1] += dy * inv
    for i in range(n):
        vel[i, 0] += 0.01 * acc[i, 0]
        vel[i, 1] += 0.01 * acc[i, 1]
        pos[i, 0] += 0.01 * vel[i, 0]
        pos[i, 1] += 0.01 * vel[i, 1]
    return pos, vel


def bounce(pos, vel):
    n = pos.shape[0]
    for _t in range(20):
        for i in range(n):
            pos[i] += 0.1 * vel[i]
            if pos[i] < 0.0:
                pos[i] = -pos[i]
                vel[i] = -vel[i]
            elif pos[i] > 1.0:
                pos[i] = 2.0 - pos[i]
                vel[i] = -vel[i]
    return pos, vel


def histogram(x, bins):
    counts = np.zeros(bins.shape[0], np.int64)
    for i in range(x.shape[0]):
        k = int(x[i] * bins.shape[0])
        counts[min(max(k, 0), bins.shape[0] - 1)] += 1
    return counts


# -- the cases --------------------------------------------------------------------------------


def _cases(n: int) -> list[tuple[str, Callable, Callable[[], tuple]]]:
    """(name, kernel, make_inputs) per kernel, at the size ``n`` (rows of a square matrix)."""
    rng = np.random.default_rng(0)

    def mat(r: int, c: int) -> np.ndarray:
        return rng.standard_normal((r, c))

    def vec(k: int) -> np.ndarray:
        return rng.standard_normal(k)

    M = mat(n, n)
    spd = M @ M.T + n * np.eye(n)
    lower = np.tril(mat(n, n)) + n * np.eye(n)
    nnz = 4
    ptr = np.arange(0, n * nnz + 1, nnz)
    cols = rng.integers(0, n, n * nnz)
    D = np.abs(mat(n, n)) * 10
    long = 16 * n
    a_seq, b_seq = rng.integers(0, 4, n), rng.integers(0, 4, n)
    return [
        ("gemm", gemm, lambda: (mat(n, n), mat(n, n), mat(n, n))),
        ("gemver", gemver, lambda: (mat(n, n), *(vec(n) for _ in range(6)))),
        ("gesummv", gesummv, lambda: (mat(n, n), mat(n, n), vec(n))),
        ("syrk", syrk, lambda: (mat(n, n), mat(n, n))),
        ("syr2k", syr2k, lambda: (mat(n, n), mat(n, n), mat(n, n))),
        ("trmm", trmm, lambda: (mat(n, n), mat(n, n))),
        ("atax", atax, lambda: (mat(n, n), vec(n))),
        ("bicg", bicg, lambda: (mat(n, n), vec(n), vec(n))),
        ("mvt", mvt, lambda: (mat(n, n), vec(n), vec(n), vec(n), vec(n))),
        ("cholesky", cholesky, lambda: (spd.copy(),)),
        ("lu", lu, lambda: (spd.copy(),)),
        ("trisolv", trisolv, lambda: (lower.copy(), vec(n))),
        ("durbin", durbin, lambda: (vec(n) * 0.1,)),
        ("gramschmidt", gramschmidt, lambda: (mat(n, n) + n * np.eye(n),)),
        ("sparse_matvec", sparse_matvec, lambda: (vec(n * nnz), cols, ptr, vec(n))),
        ("jacobi_1d", jacobi_1d, lambda: (vec(long), vec(long))),
        ("jacobi_2d", jacobi_2d, lambda: (mat(n, n), mat(n, n))),
        ("seidel_2d", seidel_2d, lambda: (mat(n, n),)),
        ("gauss_seidel_1d", gauss_seidel_1d, lambda: (vec(long), vec(long))),
        ("fdtd_1d", fdtd_1d, lambda: (vec(long), vec(long))),
        ("floyd_warshall", floyd_warshall, lambda: (D.copy(),)),
        ("lcs_length", lcs_length, lambda: (a_seq, b_seq)),
        ("edit_distance", edit_distance, lambda: (a_seq, b_seq)),
        (
            "knapsack",
            knapsack,
            lambda: (rng.integers(1, 8, n), rng.integers(1, 20, n), np.zeros(4 * n, np.int64)),
        ),
        ("iir_filter", iir_filter, lambda: (vec(long),)),
        ("prefix_sum", prefix_sum, lambda: (vec(long),)),
        ("logistic_map", logistic_map, lambda: (3.5 + 0.4 * rng.random(n),)),
        ("horner", horner, lambda: (vec(8), vec(long))),
        ("crc32", crc32, lambda: (rng.integers(0, 256, long).astype(np.uint8),)),
        ("popcounts", popcounts, lambda: (rng.integers(0, 2**31, n),)),
        (
            "xorshift_stream",
            xorshift_stream,
            lambda: (rng.integers(1, 2**62, n).astype(np.uint64),),
        ),
        ("nbody_step", nbody_step, lambda: (mat(n, 2), mat(n, 2))),
        ("bounce", bounce, lambda: (rng.random(long), vec(long))),
        ("histogram", histogram, lambda: (rng.random(long), np.zeros(16))),
    ]


# -- measuring --------------------------------------------------------------------------------


def _leaves(value: Any) -> list:
    return [x for v in value for x in _leaves(v)] if isinstance(value, tuple) else [value]


def _agreement(got: tuple, want: tuple) -> str:
    """``ok`` (bitwise), ``~`` (within 1e-12 relative) or ``x``."""
    pairs = list(zip(got, want))
    if len(got) == len(want) and all(
        np.asarray(g).dtype == np.asarray(w).dtype
        and np.asarray(g).tobytes() == np.asarray(w).tobytes()
        for g, w in pairs
    ):
        return "ok"
    try:
        if len(got) == len(want) and all(
            np.allclose(g, w, rtol=1e-12, atol=0, equal_nan=True) for g, w in pairs
        ):
            return "~"
    except TypeError:
        pass
    return "x"


def _run(fn: Callable, make: Callable[[], tuple]) -> tuple[float, tuple]:
    """Seconds of one call on fresh inputs, and (results..., arguments after the call)."""
    args = [a.copy() for a in make()]
    t0 = time.perf_counter()
    out = fn(*args)
    dt = time.perf_counter() - t0
    return dt, tuple(_leaves(out)) + tuple(args)


def _warm_up(f: Callable, make: Callable[[], tuple], calls: int = 6) -> tuple:
    """Calls until the function's background compiles have finished and ``auto``'s tiering
    has had its trial calls (what runs after warm-up is what is timed); the last results."""
    from kernel_ext.backends.compiler import wait_for_kernels

    got: tuple = ()
    for _ in range(calls):
        wait_for_kernels(timeout=120)
        _, got = _run(f, make)
    return got


def _worst(*agreements: str) -> str:
    return max(agreements, key="ok~x".index)


def _best(fn: Callable, make: Callable[[], tuple], repeat: int) -> float:
    return min(_run(fn, make)[0] for _ in range(repeat))


#: Interleaved rounds: at least ``repeat`` of them, and more (up to ``ROUNDS_MAX``) until the
#: contenders' calls took ``ROUNDS_SECONDS`` together: a microsecond kernel's best of 7 calls
#: varied by 15% from run to run, and a contender timed after the others meets another state
#: of the machine (frequency, caches, other load).
ROUNDS_MAX, ROUNDS_SECONDS = 300, 0.05


def _best_interleaved(
    contenders: dict[str, Callable], make: Callable[[], tuple], repeat: int
) -> dict[str, float]:
    """Each contender's best time of one call, from rounds that call each once in turn."""
    best = dict.fromkeys(contenders, float("inf"))
    spent, rounds = 0.0, 0
    while rounds < repeat or (spent < ROUNDS_SECONDS and rounds < ROUNDS_MAX):
        for name, fn in contenders.items():
            dt = _run(fn, make)[0]
            best[name] = min(best[name], dt)
            spent += dt
        rounds += 1
    return best


def _paths() -> dict[str, Callable[[Callable], Callable]]:
    import kernel_ext as kx

    return {"auto": lambda f: kx.function(f), "jit": lambda f: kx.function(f, jit_compile=True)}


def measure(
    name: str, kernel: Callable, make: Callable[[], tuple], paths: list[str], repeat: int
) -> dict[str, Any]:
    import numba

    row: dict[str, Any] = {"name": name}
    inputs = make()  # one set of inputs: every call gets fresh copies of these
    make = lambda: inputs  # noqa: E731
    with np.errstate(all="ignore"):
        _, want = _run(kernel, make)
    with np.errstate(all="ignore"):
        row["numpy"] = _best(kernel, make, max(1, repeat // 2))
    contenders: dict[str, Callable] = {}
    try:
        hand = numba.njit(kernel)
        row["numba first"], got = _run(hand, make)
        row["numba bits"] = _agreement(got, want)
        contenders["numba"] = hand
    except Exception as e:  # noqa: BLE001 -- a kernel Numba cannot compile: say so
        row["numba"] = None
        row["numba error"] = f"{type(e).__name__}"
    for path in paths:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f = _paths()[path](kernel)
                first, got = _run(f, make)
                row[f"{path} first"] = first
                warmed = _warm_up(f, make)
                # the first call's results and the warmed-up executor's, both against NumPy
                row[f"{path} bits"] = _worst(_agreement(got, want), _agreement(warmed, want))
                contenders[path] = f
        except Exception as e:  # noqa: BLE001 -- report the error in the table
            row[path] = None
            row[f"{path} bits"] = "err"
            row[f"{path} error"] = f"{type(e).__name__}: {str(e)[:60]}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row.update(_best_interleaved(contenders, make, repeat))
    return row


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:7.2f}" if a and b else "      -"


def report(rows: list[dict[str, Any]], paths: list[str]) -> str:
    head = f"{'kernel':<16} {'numpy s':>9} {'numba first':>11}"
    for p in paths:
        head += f" | {p:>5} first  vs numpy  vs numba  bits"
    lines = [head, "-" * len(head)]
    for r in rows:
        line = f"{r['name']:<16} {r['numpy']:9.2e} {r.get('numba first', 0):11.2f}"
        for p in paths:
            first = r.get(f"{p} first")
            line += (
                f" | {first if first is not None else float('nan'):11.2f} "
                f"{_ratio(r['numpy'], r.get(p))} {_ratio(r.get('numba'), r.get(p))}"
                f"  {r.get(f'{p} bits', '-'):>4}"
            )
        lines.append(line)
        for p in paths:
            if f"{p} error" in r:
                lines.append(f"    {p}: {r[f'{p} error']}")
    lines.append("-" * len(head))
    for p in ["numba"] + paths:
        ran = [r for r in rows if r.get(p)]
        if not ran:
            continue
        geo = math.exp(sum(math.log(r["numpy"] / r[p]) for r in ran) / len(ran))
        slower = sum(r["numpy"] < r[p] for r in ran)
        firsts = [r.get(f"{p} first", 0.0) for r in ran]
        bits = sum(r.get(f"{p} bits") == "ok" for r in ran)
        lines.append(
            f"{p:>6}: {len(ran)} ran, geomean speed vs NumPy {geo:.2f}x, "
            f"{slower} slower than NumPy, first call max {max(firsts):.1f} s, "
            f"{bits} bitwise"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--only", default="", help="comma-separated kernel names")
    parser.add_argument("--paths", default="auto,jit", help="kx paths: auto, jit")
    args = parser.parse_args(argv)
    n = 12 if args.quick else 48
    repeat = 3 if args.quick else 7
    paths = [p for p in args.paths.split(",") if p]
    only = set(filter(None, args.only.split(",")))
    rows = []
    for name, kernel, make in _cases(n):
        if only and name not in only:
            continue
        rows.append(measure(name, kernel, make, paths, repeat))
        print(f"  measured {name}", file=sys.stderr, flush=True)
    print(report(rows, paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
