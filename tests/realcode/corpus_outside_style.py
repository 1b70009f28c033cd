"""Corpus: code in the style of outside benchmark suites and textbooks (written here).

Solvers that loop ``while`` a residual is above a tolerance (Jacobi, Gauss-Seidel, Newton,
bisection), bit manipulation (popcount by shifts and by masks, bit reversal, Gray code, CRCs
with a branch per bit), buffers made with ``np.ndarray((n, 3))`` / ``np.empty`` and filled,
reshape by assignment (``x.shape = ...``), ``np.std(..., correction=1)``, ``np.round`` of
integers, mixed-rank ``np.linalg.vecdot(..., axis=)``, and a few textbook loops.
"""

import numpy as np

from .harness import case


def _grid(n):
    return lambda rng: ((rng.standard_normal((n, n)),), {})


def _positive(n):
    return lambda rng: ((rng.uniform(0.5, 20.0, n),), {})


def _words(n, dtype=np.uint32):
    return lambda rng: ((rng.integers(0, np.iinfo(dtype).max, n, dtype=dtype, endpoint=True),), {})


# -- solvers with a while on a residual --------------------------------------------------------


@case(make=_grid(10), category="outside_style", tags=("jacobi", "while_residual"))
def jacobi_poisson(f):
    n = f.shape[0]
    h2 = 1.0 / (n - 1) ** 2
    u = np.zeros_like(f)
    udiff = 1.0
    it = 0
    while udiff > 1e-6 and it < 400:
        un = u.copy()
        un[1:-1, 1:-1] = 0.25 * (
            u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - h2 * f[1:-1, 1:-1]
        )
        udiff = np.sum(np.abs(un - u)) / (np.sum(np.abs(un)) + 1e-30)
        u = un
        it += 1
    return u, it


def _spd(rng):
    M = rng.standard_normal((6, 6))
    return (M @ M.T + 6 * np.eye(6), rng.standard_normal(6)), {}


@case(make=_spd, category="outside_style", tags=("gauss_seidel", "while_residual", "norm"))
def gauss_seidel_while_residual(A, b):
    x = np.zeros_like(b)
    r = np.linalg.norm(b - A @ x)
    k = 0
    while r > 1e-10 * np.linalg.norm(b) and k < 200:
        for i in range(b.shape[0]):
            s = A[i, :i] @ x[:i] + A[i, i + 1 :] @ x[i + 1 :]
            x[i] = (b[i] - s) / A[i, i]
        r = np.linalg.norm(b - A @ x)
        k += 1
    return x, k


@case(make=_positive(12), category="outside_style", tags=("newton", "while_residual"))
def newton_sqrt(a):
    y = np.maximum(a, 1.0)
    while np.max(np.abs(y * y - a) / a) > 1e-14:
        y = 0.5 * (y + a / y)
    return y


def _scalar(rng):
    return (float(rng.uniform(2.0, 50.0)),), {}


@case(make=_scalar, category="outside_style", tags=("newton", "scalar_while", "abs"))
def newton_cube_root_until_converged(c):
    x = c
    fx = x**3 - c
    n = 0
    while abs(fx) > 1e-12 * c and n < 100:
        x = x - fx / (3 * x**2)
        fx = x**3 - c
        n += 1
    return x, n


@case(make=_positive(1), category="outside_style", tags=("bisection", "traced_if", "while"))
def bisection_sqrt(c):
    c = c[0]
    lo, hi = 0.0, max(1.0, c)
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if mid * mid > c:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


# -- bit manipulation --------------------------------------------------------------------------


@case(make=_words(16), category="outside_style", tags=("popcount", "shifts", "while_any"))
def popcount_by_shifts(x):
    count = np.zeros_like(x)
    v = x.copy()
    while np.any(v):
        count += v & 1
        v >>= 1
    return count


@case(make=_words(16), category="outside_style", tags=("popcount", "swar", "masks"))
def popcount_swar(x):
    v = x - ((x >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return (v * 0x01010101) >> 24


@case(make=_words(16, np.uint8), category="outside_style", tags=("bit_reversal", "for_range"))
def reverse_bits_u8(x):
    r = np.zeros_like(x)
    v = x.copy()
    for _ in range(8):
        r = (r << 1) | (v & 1)
        v = v >> 1
    return r


@case(make=_words(16), category="outside_style", tags=("gray_code", "xor", "while_any"))
def gray_code_roundtrip(x):
    g = x ^ (x >> 1)
    b = g.copy()
    shift = g >> 1
    while np.any(shift):
        b ^= shift
        shift >>= 1
    return g, b


@case(
    make=_words(12, np.uint8),
    category="outside_style",
    tags=("crc", "traced_if", "augmented_shift"),
)
def crc8_bitwise(data):
    crc = np.uint8(0)
    for byte in data:
        crc ^= byte
        for _ in range(8):
            if crc & 0x80:
                crc = (crc << 1) ^ np.uint8(0x07)
            else:
                crc <<= 1
    return crc


@case(
    make=_words(8, np.uint8),
    category="outside_style",
    tags=("crc", "traced_if", "augmented_shift", "uint32"),
)
def crc32_bitwise(data):
    crc = np.uint32(0xFFFFFFFF)
    for byte in data:
        crc ^= np.uint32(byte)
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ np.uint32(0xEDB88320)
            else:
                crc >>= 1
    return crc ^ np.uint32(0xFFFFFFFF)


@case(make=_words(8, np.uint8), category="outside_style", tags=("crc", "branchless", "uint32"))
def crc32_branchless(data):
    crc = np.uint32(0xFFFFFFFF)
    for byte in data:
        crc = crc ^ byte  # (uint32 ^ uint8 stays uint32)
        for _ in range(8):
            mask = np.uint32(0) - (crc & np.uint32(1))
            crc = (crc >> np.uint32(1)) ^ (np.uint32(0xEDB88320) & mask)
    return ~crc


# -- buffers and reshape by assignment ---------------------------------------------------------


def _points(rng):
    return (rng.standard_normal((7, 2)),), {}


@case(make=_points, category="outside_style", tags=("np_ndarray_buffer", "element_fill"))
def polar_table(p):
    n = p.shape[0]
    out = np.ndarray((n, 3), dtype=np.float64)
    for i in range(n):
        out[i, 0] = np.hypot(p[i, 0], p[i, 1])
        out[i, 1] = np.arctan2(p[i, 1], p[i, 0])
        out[i, 2] = p[i, 0] * p[i, 1]
    return out


@case(make=_points, category="outside_style", tags=("np_ndarray_buffer", "row_fill", "float32"))
def bounding_boxes(p):
    n = p.shape[0] - 1
    boxes = np.ndarray((n, 4), np.float32)
    for i in range(n):
        a, b = p[i], p[i + 1]
        boxes[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1])]
    return boxes


@case(make=_grid(6), category="outside_style", tags=("np_empty_buffer", "column_fill"))
def row_summary(x):
    out = np.empty((x.shape[0], 3))
    out[:, 0] = x.min(axis=1)
    out[:, 1] = x.max(axis=1)
    out[:, 2] = x.mean(axis=1)
    return out


@case(
    make=lambda rng: ((rng.standard_normal(12),), {}),
    category="outside_style",
    tags=("shape_assignment", "reshape"),
)
def reshape_by_assignment(x):
    y = x.copy()
    y.shape = (3, 4)
    return y.sum(axis=0), y


# -- NumPy keywords and integer inputs ---------------------------------------------------------


@case(make=_grid(5), category="outside_style", tags=("std", "correction"))
def sample_std_correction(x):
    return np.std(x, axis=1, correction=1), np.var(x, correction=1)


@case(make=_grid(5), category="outside_style", tags=("std", "ddof"))
def sample_std_ddof(x):
    return np.std(x, axis=0, ddof=1), np.var(x, ddof=1)


@case(
    make=lambda rng: ((rng.integers(-(10**6), 10**6, 10),), {}),
    category="outside_style",
    tags=("round", "int_input"),
)
def round_to_tens(counts):
    return np.round(counts, -1), np.around(counts)


def _mixed_rank(rng):
    return (rng.standard_normal((3, 4)), rng.standard_normal(3)), {}


@case(make=_mixed_rank, category="outside_style", tags=("vecdot", "mixed_rank", "axis"))
def column_projections(a, v):
    return np.linalg.vecdot(a, v, axis=0)


def _column_and_vector(rng):
    return (rng.standard_normal((3, 1)), rng.standard_normal(3)), {}


@case(
    make=_column_and_vector,
    category="outside_style",
    tags=("vecdot", "mixed_rank", "size_one_axis"),
)
def single_column_projection(a, v):
    # NumPy moves each operand's axis last, then broadcasts: (1, 3) with (3,) -> (1,)
    return np.linalg.vecdot(a, v, axis=0)


# -- textbook loops ----------------------------------------------------------------------------


def _samples(rng):
    return (np.sin(np.linspace(0, rng.uniform(1, 3), 33)), 0.1), {}


@case(make=_samples, category="outside_style", tags=("trapezoid", "for_range", "scalar_acc"))
def trapezoid_by_loop(f, h):
    s = 0.5 * (f[0] + f[-1])
    for i in range(1, f.shape[0] - 1):
        s += f[i]
    return s * h


def _poly(rng):
    return (rng.standard_normal(5), rng.standard_normal(9)), {}


@case(make=_poly, category="outside_style", tags=("horner", "for_over_array"))
def horner_by_loop(coeffs, x):
    y = np.zeros_like(x)
    for c in coeffs:
        y = y * x + c
    return y


def _pairs(rng):
    return (rng.integers(1, 10**6, 8), rng.integers(1, 10**6, 8)), {}


@case(make=_pairs, category="outside_style", tags=("gcd", "while_any", "where"))
def euclid_gcd(a, b):
    a, b = a.copy(), b.copy()
    while np.any(b != 0):
        nz = b != 0
        r = np.where(nz, a % np.where(nz, b, 1), 0)
        a = np.where(nz, b, a)
        b = r
    return a


@case(
    make=lambda rng: ((rng.standard_normal((3, 3)) / 2, int(rng.integers(5, 12))), {}),
    category="outside_style",
    tags=("matrix_power", "python_int_while", "bit_test"),
)
def matrix_power_by_squaring(A, n):
    result = np.eye(A.shape[0])
    base = A.copy()
    while n:
        if n & 1:
            result = result @ base
        base = base @ base
        n >>= 1
    return result


# -- a long solver, as textbooks write them (one function, many statements) ----------------------


def _plate(rng):
    return (rng.uniform(0.0, 100.0, 4), int(rng.integers(10, 13))), {}


@case(make=_plate, category="outside_style", tags=("long_function", "while_residual", "jacobi"))
def heated_plate(edges, n):
    # Steady temperature of a square plate whose four edges are held at fixed temperatures,
    # by Jacobi sweeps until the mean change of a sweep drops below a tolerance.
    top, bottom, left, right = edges[0], edges[1], edges[2], edges[3]
    w = np.zeros((n, n))
    # boundary values
    w[0, :] = top
    w[n - 1, :] = bottom
    w[1 : n - 1, 0] = left
    w[1 : n - 1, n - 1] = right
    # corners: the mean of their two edges
    w[0, 0] = 0.5 * (top + left)
    w[0, n - 1] = 0.5 * (top + right)
    w[n - 1, 0] = 0.5 * (bottom + left)
    w[n - 1, n - 1] = 0.5 * (bottom + right)
    # interior: start from the mean of the boundary
    boundary_sum = (
        np.sum(w[0, :])
        + np.sum(w[n - 1, :])
        + np.sum(w[1 : n - 1, 0])
        + np.sum(w[1 : n - 1, n - 1])
    )
    boundary_count = 4 * n - 4
    mean = boundary_sum / boundary_count
    w[1 : n - 1, 1 : n - 1] = mean
    # iterate
    epsilon = 0.001
    udiff = epsilon + 1.0
    iterations = 0
    iterations_print = 1
    history = np.zeros(64)
    while udiff > epsilon:
        u = w.copy()
        w[1 : n - 1, 1 : n - 1] = (
            u[0 : n - 2, 1 : n - 1]
            + u[2:n, 1 : n - 1]
            + u[1 : n - 1, 0 : n - 2]
            + u[1 : n - 1, 2:n]
        ) / 4.0
        udiff = np.max(np.abs(w - u))
        iterations = iterations + 1
        if iterations == iterations_print:
            history[min(iterations, 63)] = udiff
            iterations_print = 2 * iterations_print
        if iterations >= 2000:
            break
    # a summary, as a script would print it
    interior = w[1 : n - 1, 1 : n - 1]
    hottest = np.max(interior)
    coldest = np.min(interior)
    spread = hottest - coldest
    center = w[n // 2, n // 2]
    row_means = np.mean(w, axis=1)
    col_means = np.mean(w, axis=0)
    gradient_y = np.diff(row_means)
    gradient_x = np.diff(col_means)
    steepest = max(np.max(np.abs(gradient_x)), np.max(np.abs(gradient_y)))
    total_heat = np.sum(interior)
    average = total_heat / interior.size
    report = np.array([hottest, coldest, spread, center, steepest, average])
    return w, iterations, history, report
