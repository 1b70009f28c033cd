"""Whole-graph rules of sorting and searching: sort/argsort (NumPy's order), searchsorted,
digitize, unique, interp and histogram.
"""

from __future__ import annotations

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import Unsupported, const_source, ctor
from ..emit.source import Source
from ..static_shapes import ranked_shape
from .common import (
    DTYPES,
    MIXED_ZEROS,
    RULES,
    Rule,
    Writer,
    array_arg,
    checked_axis,
    only_params,
    shape_tuple,
)

# ---------------------------------------------------------------------------------------------
# sort / argsort
# ---------------------------------------------------------------------------------------------

# NumPy's sort order: NaNs last, ``-0.0 == 0.0`` (the sort and the binary search share it).
_NAN_LAST_LT = """\
@_inline
def _lt(a, b):
    return a < b or (b != b and a == a)
"""

# A stable bottom-up merge sort of indices by NumPy's order (NaNs last, ``-0.0 == 0.0``):
# NumPy's own stable sort. Where NumPy's default (unstable) kind may order ties its own way,
# the caller checks that there are none that matter.
_ARGSORT = """\
@_inline
def _argsort_lane(v, idx, tmp):
    n = v.shape[0]
    for i in range(n):
        idx[i] = i
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if _lt(v[idx[j]], v[idx[i]]):
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = hi
        for q in range(n):
            idx[q] = tmp[q]
        width *= 2


@_inline
def _sort_rows(x2, o2, want_index, bits):
    # o2: the sorted values (want_index False) or their indices; returns True where NumPy's
    # result could differ: equal values of different bits (sort: -0.0 and 0.0, two NaNs of
    # different payloads), or any tie (argsort of an unstable kind: ``bits`` None)
    n = x2.shape[1]
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(x2.shape[0]):
        v = x2[r]
        _argsort_lane(v, idx, tmp)
        for i in range(n):
            if i > 0:
                a = v[idx[i - 1]]
                b = v[idx[i]]
                if a == b or (a != a and b != b):
                    if want_index:
                        return True
                    if bits[r, idx[i - 1]] != bits[r, idx[i]]:
                        return True
            if want_index:
                o2[r, i] = idx[i]
            else:
                o2[r, i] = v[idx[i]]
    return False
"""


def _check_sort(node: Node) -> tuple[Node, int | None]:
    only_params(node, {"axis", "kind"})
    x = array_arg(node, 0, "a value")
    kind = node.attrs.get("kind")
    if kind not in (None, "quicksort", "stable", "mergesort", "heapsort"):
        raise Unsupported(f"{node.op.value} kind {kind!r}")
    rank = len(ranked_shape(x))
    axis = node.attrs.get("axis", -1)
    if axis is None:
        return x, None
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return x, checked_axis(axis, rank, node.op.value)


def _emit_sort(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """Each lane (the axis moved last, C-ordered) sorted by a stable merge sort. A stable
    ``argsort`` is NumPy's; for ``sort`` and an unstable ``argsort`` the sorted result is
    unique where no tie could come out in another order, which is checked: else it signals.
    """
    x_node, axis = _check_sort(node)
    rank = len(ranked_shape(x_node))
    x = args[0].name
    dt = np.dtype(x_node.dtype)
    out_dt = ctor(np.dtype(node.dtype))
    if axis is None:
        perm = inv = None
        src = f"{x}.ravel()"
        rank = 1
    else:
        perm = [d for d in range(rank) if d != axis] + [axis]
        inv = [perm.index(d) for d in range(rank)]
        src = f"np.transpose({x}, {tuple(perm)!r})" if perm != list(range(rank)) else x
    c = w.fresh("s")
    out.line(f"{c} = np.ascontiguousarray({src})")
    lanes = " * ".join(f"{c}.shape[{d}]" for d in range(rank - 1)) or "1"
    n = f"{c}.shape[{rank - 1}]"
    x2, o2 = w.fresh("s"), w.fresh("s")
    out.line(f"{x2} = {c}.reshape(({lanes}, {n}))")
    out.line(f"{o2} = np.empty(({lanes}, {n}), {out_dt})")
    stable = node.attrs.get("kind") in ("stable", "mergesort")
    want_index = node.op is OpKind.ARGSORT
    w.helpers["_lt"] = _NAN_LAST_LT
    w.helpers["_argsort"] = _ARGSORT
    bad = w.fresh("bad")
    if want_index and stable:  # ties in index order: NumPy's stable sort, nothing to check
        w.helpers["_argsort_stable"] = _ARGSORT_STABLE
        out.line(f"{bad} = _sort_rows_stable({x2}, {o2})")
    else:
        # the bits of equal values (a float's bits; an integer's are its value)
        bits = f"{x2}.view(np.uint{8 * dt.itemsize})" if dt.kind == "f" else x2
        out.line(f"{bad} = _sort_rows({x2}, {o2}, {want_index}, {bits})")
    w.signal(out, bad)
    shaped = f"{o2}.reshape({c}.shape)"
    if inv is not None and inv != list(range(rank)):
        shaped = f"np.ascontiguousarray(np.transpose({shaped}, {tuple(inv)!r}))"
    out.line(f"{t} = {shaped}")
    return "fresh"


_ARGSORT_STABLE = """\
@_inline
def _sort_rows_stable(x2, o2):
    n = x2.shape[1]
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(x2.shape[0]):
        _argsort_lane(x2[r], idx, tmp)
        for i in range(n):
            o2[r, i] = idx[i]
    return False
"""

RULES[OpKind.SORT] = Rule(lambda n: _check_sort(n) and None, _emit_sort)
RULES[OpKind.ARGSORT] = Rule(lambda n: _check_sort(n) and None, _emit_sort)


# ---------------------------------------------------------------------------------------------
# searchsorted / digitize
# ---------------------------------------------------------------------------------------------

# NumPy's binary search (``npysort/binsearch.cpp``) step for step, so that even an unsorted
# ``a`` gives NumPy's answer: each key narrows from where the previous one ended (the bounds
# reset when the keys go down), comparing with NumPy's order (NaNs last). ``right``: the
# comparison is ``a <= key`` instead of ``a < key``.
_SEARCHSORTED = """\
@_inline
def _ss_cmp(a, b, right):
    if right:
        return not _lt(b, a)
    return _lt(a, b)


@_inline
def _searchsorted(arr, keys, out, right):
    n = arr.shape[0]
    if keys.shape[0] == 0:
        return
    lo = 0
    hi = n
    last = keys[0]
    for i in range(keys.shape[0]):
        key = keys[i]
        if _ss_cmp(last, key, right):
            hi = n
        else:
            lo = 0
            hi = hi + 1 if hi < n else n
        last = key
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if _ss_cmp(arr[mid], key, right):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
"""

# NumPy's ``_monotonicity`` of digitize's bins (as float64): 1 increasing, -1 decreasing,
# 0 neither (NumPy's ValueError). Comparisons with a NaN are false, so a NaN second value
# makes the bins "decreasing", as in NumPy.
_MONOTONICITY = """\
@_inline
def _monotonicity(a):
    n = a.shape[0]
    if n == 0:
        return 1
    last = a[0]
    i = 1
    while i < n and a[i] == last:
        i += 1
    if i == n:
        return 1
    nxt = a[i]
    if last < nxt:
        for k in range(i + 1, n):
            last = nxt
            nxt = a[k]
            if last > nxt:
                return 0
        return 1
    for k in range(i + 1, n):  # anything else (a NaN after the first value too)
        last = nxt
        nxt = a[k]
        if last < nxt:
            return 0
    return -1
"""


def _check_search(node: Node) -> tuple[Node, Node, np.dtype]:
    """The sorted array, the keys and the dtype NumPy compares them in."""
    if node.op is OpKind.SEARCHSORTED:
        only_params(node, {"side"})
        if len(node.args) > 2 and node.args[2] is not None:
            raise Unsupported("searchsorted with a sorter")
        a, v = array_arg(node, 0, "a sorted array"), array_arg(node, 1, "keys")
    else:
        only_params(node, {"right"})
        v, a = array_arg(node, 0, "values"), array_arg(node, 1, "bins")
    if len(ranked_shape(a)) != 1:
        raise Unsupported(f"{node.op.value} into an array of rank {len(ranked_shape(a))}")
    common = np.result_type(a.dtype, v.dtype)
    if common not in DTYPES or common.kind == "b":
        raise Unsupported(f"{node.op.value} of {a.dtype} and {v.dtype}")
    if np.dtype(node.dtype) != np.dtype(np.intp):
        raise Unsupported(f"{node.op.value} into {node.dtype}")
    return a, v, common


def _emit_search(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """NumPy's binary search of each key (C order) in the common dtype of the two arrays.
    ``digitize``: NumPy's composition — the bins' monotonicity (non-monotonic bins signal
    NumPy's ValueError), then searchsorted with the other side, reversed for decreasing
    bins."""
    a_node, v_node, common = _check_search(node)
    ai, vi = (0, 1) if node.op is OpKind.SEARCHSORTED else (1, 0)
    cts = ctor(common)
    a, v = w.fresh("sa"), w.fresh("sv")
    cast_a = "" if np.dtype(a_node.dtype) == common else f".astype({cts})"
    cast_v = "" if np.dtype(v_node.dtype) == common else f".astype({cts})"
    out.line(f"{a} = {args[ai].name}{cast_a}")
    rank = len(ranked_shape(v_node))
    src = args[vi].name
    if rank == 0:
        out.line(f"{v} = np.full(1, {src}, {cts})")
    else:
        out.line(f"{v} = np.ascontiguousarray({src}{cast_v}).ravel()")
    w.helpers["_lt"] = _NAN_LAST_LT
    w.helpers["_searchsorted"] = _SEARCHSORTED
    o = w.fresh("so")
    out.line(f"{o} = np.empty({v}.shape[0], np.int64)")
    if node.op is OpKind.SEARCHSORTED:
        right = node.attrs.get("side", "left") == "right"
        out.line(f"_searchsorted({a}, {v}, {o}, {right})")
    else:
        w.helpers["_monotonicity"] = _MONOTONICITY
        mono = w.fresh("mono")
        out.line(f"{mono} = _monotonicity({args[ai].name}.astype(np.float64))")
        w.signal(out, f"{mono} == 0")
        right = not node.attrs.get("right", False)  # NumPy swaps the side
        with out.block(f"if {mono} == -1:") as body:
            body.line(f"_searchsorted({a}[::-1], {v}, {o}, {right})")
            body.line(f"{o} = {a}.shape[0] - {o}")
        with out.block("else:") as body:
            body.line(f"_searchsorted({a}, {v}, {o}, {right})")
    if rank == 0:
        out.line(f"{t} = {o}[0]")
        return "scalar"
    shape = shape_tuple([f"{args[vi].name}.shape[{d}]" for d in range(rank)])
    out.line(f"{t} = {o}.reshape({shape})")
    return "fresh"


RULES[OpKind.SEARCHSORTED] = Rule(lambda n: _check_search(n) and None, _emit_search)
RULES[OpKind.DIGITIZE] = Rule(lambda n: _check_search(n) and None, _emit_search)


# ---------------------------------------------------------------------------------------------
# unique / interp / histogram
# ---------------------------------------------------------------------------------------------

# ``np.unique`` (``_unique1d``): the sorted values, a value kept where it differs from the one
# before, its first index from a stable (merge) argsort, its count from the next kept place.
# Equal floats of different bits (``-0.0``/``0.0``; NaNs, which ``equal_nan`` merges) keep the
# one NumPy's sort put first: those signal.
_UNIQUE = """\
@_inline
def _unique_runs(aux):
    n = aux.shape[0]
    mask = np.empty(n, np.bool_)
    if n > 0:
        mask[0] = True
    for i in range(1, n):
        mask[i] = aux[i] != aux[i - 1]
    starts = np.flatnonzero(mask)
    counts = np.empty(starts.shape[0], np.int64)
    for i in range(starts.shape[0]):
        end = starts[i + 1] if i + 1 < starts.shape[0] else n
        counts[i] = end - starts[i]
    return starts, counts
"""


def _check_unique(node: Node) -> np.dtype:
    only_params(node, {"return_index", "return_inverse", "return_counts", "equal_nan"})
    x = array_arg(node, 0, "an array")
    if node.attrs.get("return_inverse"):
        raise Unsupported("unique with return_inverse")
    if not node.attrs.get("equal_nan", True):
        raise Unsupported("unique with equal_nan=False")
    if np.dtype(x.dtype).kind not in "iuf":
        raise Unsupported(f"unique of {x.dtype}")
    return np.dtype(x.dtype)


def _emit_unique(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    dt = _check_unique(node)
    flat, aux, perm = w.fresh("u"), w.fresh("u"), w.fresh("u")
    out.line(f"{flat} = np.ascontiguousarray({args[0].name}).ravel()")
    with_index = bool(node.attrs.get("return_index"))
    if with_index:  # NumPy: a mergesort argsort, so the first of equal values is kept
        out.line(f"{perm} = np.argsort({flat}, kind='mergesort')")
        out.line(f"{aux} = {flat}[{perm}]")
    else:
        out.line(f"{aux} = np.sort({flat})")
    if dt.kind == "f":
        w.helpers["_mixed_zeros"] = MIXED_ZEROS
        w.signal(
            out,
            f"{aux}.shape[0] > 0 and {aux}[{aux}.shape[0] - 1] != {aux}[{aux}.shape[0] - 1]",
        )
        w.signal(out, f"_mixed_zeros({aux})")
    w.helpers["_unique_runs"] = _UNIQUE
    starts, counts, vals = w.fresh("u"), w.fresh("u"), w.fresh("u")
    out.line(f"{starts}, {counts} = _unique_runs({aux})")
    out.line(f"{vals} = {aux}[{starts}]")
    outs = [vals]
    if with_index:
        outs.append(f"{perm}[{starts}]")
    if node.attrs.get("return_counts"):
        outs.append(counts)
    if len(outs) == 1:
        out.line(f"{t} = {vals}")
    else:
        out.line(f"{t} = {shape_tuple(outs)}")
    return "fresh"


RULES[OpKind.UNIQUE] = Rule(lambda n: _check_unique(n) and None, _emit_unique)

# ``np.interp`` (``compiled_base.c``'s ``arr_interp``) on float64 values: for sorted ``xp``
# the interval ``j`` with ``xp[j] <= x < xp[j + 1]`` is unique, so any search finds NumPy's;
# then NumPy's formula: the slope ``(fp[j+1] - fp[j]) / (xp[j+1] - xp[j])`` times
# ``x - xp[j]`` plus ``fp[j]``, retried from the right end on a NaN. An unsorted (or NaN)
# ``xp`` is searched NumPy's own way with its guesses: those calls signal.
_INTERP = """\
@_inline
def _interp(x, xp, fp, out):
    m = xp.shape[0]
    for i in range(m - 1):
        if not xp[i] <= xp[i + 1]:
            return True
    lval = fp[0]
    rval = fp[m - 1]
    for i in range(x.shape[0]):
        v = x[i]
        if m == 1:  # (NumPy checks no NaN here)
            out[i] = lval if v < xp[0] else (rval if v > xp[0] else fp[0])
            continue
        if v != v:
            out[i] = v
            continue
        if v > xp[m - 1]:
            out[i] = rval
            continue
        if v < xp[0]:
            out[i] = lval
            continue
        lo = 0
        hi = m
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if v >= xp[mid]:
                lo = mid + 1
            else:
                hi = mid
        j = lo - 1
        if j == m - 1 or xp[j] == v:
            out[i] = fp[j]
            continue
        slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
        r = slope * (v - xp[j]) + fp[j]
        if r != r:
            r = slope * (v - xp[j + 1]) + fp[j + 1]
            if r != r and fp[j] == fp[j + 1]:
                r = fp[j]
        out[i] = r
    return False
"""


def _check_interp(node: Node) -> None:
    only_params(node, set())
    if any(a is not None for a in node.args[3:]):
        raise Unsupported("interp with left, right or period")
    for i, what in enumerate(("x", "xp", "fp")):
        a = array_arg(node, i, what)
        if i and len(ranked_shape(a)) != 1:
            raise Unsupported(f"interp with a {len(ranked_shape(a))}-D {what}")
    if np.dtype(node.dtype) != np.float64:
        raise Unsupported(f"interp into {node.dtype}")


def _emit_interp(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """The three arrays as float64 (NumPy's conversion); lengths of ``xp`` and ``fp`` that
    differ, or an empty ``xp`` (NumPy's ValueError), signal."""
    _check_interp(node)
    x, xp, fp = (w.fresh("ip") for _ in range(3))
    rank = len(node.args[0].aval.shape)
    for v, a in zip((x, xp, fp), args):
        if v == x and rank == 0:
            out.line(f"{v} = np.full(1, np.float64({a.name}), np.float64)")
        else:
            out.line(f"{v} = np.ascontiguousarray({a.name}).ravel().astype(np.float64)")
    w.signal(out, f"{xp}.shape[0] != {fp}.shape[0] or {xp}.shape[0] == 0")
    o = w.fresh("ip")
    out.line(f"{o} = np.empty({x}.shape[0], np.float64)")
    w.helpers["_interp"] = _INTERP
    w.signal(out, f"_interp({x}, {xp}, {fp}, {o})")
    if rank == 0:
        out.line(f"{t} = {o}[0]")
        return "scalar"
    shape = shape_tuple([f"{args[0].name}.shape[{d}]" for d in range(rank)])
    out.line(f"{t} = {o}.reshape({shape})")
    return "fresh"


RULES[OpKind.INTERP] = Rule(_check_interp, _emit_interp)

# ``np.histogram`` with a number of bins and a static range, of float64 values: NumPy's fast
# path for equal bins — values outside the range dropped, the index
# ``int((x - first) / denom * bins)`` corrected by one against the edges (the last bin holds
# its right edge), counted. The edges are NumPy's own, computed once when compiling.
_HISTOGRAM = """\
@_inline
def _histogram(a, edges, first, last, denom, nbins, counts):
    for x in a:
        if not (x >= first and x <= last):
            continue
        k = int(((x - first) / denom) * nbins)
        if k == nbins:
            k -= 1
        if x < edges[k]:
            k -= 1
        if x >= edges[k + 1] and k != nbins - 1:
            k += 1
        counts[k] += 1
"""


def _histogram_range(node: Node) -> tuple[float, float, float, np.ndarray]:
    """``(first, last, denom, edges)`` as NumPy's histogram computes them from the static
    range (``denom``: NumPy's ``_unsigned_subtract(last, first)`` as a float64)."""
    only_params(node, {"bins", "range", "density"})
    a = array_arg(node, 0, "an array")
    if np.dtype(a.dtype) != np.float64:
        raise Unsupported(f"histogram of {a.dtype} (float64 only)")
    if any(v is not None for v in node.args[1:]):
        raise Unsupported("histogram with bin edges or weights")
    bins, rng = node.attrs.get("bins"), node.attrs.get("range")
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise Unsupported(f"histogram with bins={bins!r} (a number of bins only)")
    if node.attrs.get("density"):
        raise Unsupported("histogram with density")
    if rng is None or len(rng) != 2 or any(type(v) not in (int, float, np.float64) for v in rng):
        raise Unsupported(f"histogram with range={rng!r} (a static range of Python numbers)")
    first, last = rng
    try:
        edges = np.histogram_bin_edges(np.empty(0, np.float64), bins, (first, last))
    except ValueError as e:
        raise Unsupported(f"histogram range {rng!r} ({e})") from None
    if first == last:  # NumPy widens an empty range by 0.5 on each side
        first, last = first - 0.5, last + 0.5
    dt = np.result_type(last, first)
    if dt.kind == "i":
        denom = float(
            np.subtract(
                np.asarray(last, dt),
                np.asarray(first, dt),
                casting="unsafe",
                dtype=np.dtype(f"u{dt.itemsize}"),
            )
        )
    else:
        denom = float(np.subtract(last, first, dtype=dt))
    return float(first), float(last), denom, edges


def _emit_histogram(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    first, last, denom, edges = _histogram_range(node)
    nbins = int(node.attrs["bins"])
    ec = f"c{len(w.constants)}"
    w.constants.append(edges)
    w.helpers["_histogram"] = _HISTOGRAM
    counts = w.fresh("h")
    f64 = np.dtype(np.float64)
    out.line(f"{counts} = np.zeros({nbins}, np.int64)")
    out.line(
        f"_histogram(np.ascontiguousarray({args[0].name}).ravel(), {ec}, "
        f"{const_source(first, f64)}, {const_source(last, f64)}, "
        f"{const_source(denom, f64)}, {nbins}, {counts})"
    )
    out.line(f"{t} = ({counts}, {ec}.copy())")
    return "fresh"


RULES[OpKind.HISTOGRAM] = Rule(lambda n: _histogram_range(n) and None, _emit_histogram)
