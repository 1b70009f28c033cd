"""``einsum_shape``: the shape of ``np.einsum``'s result by NumPy's subscript rules, with its
errors (a shape helper beside ``getitem_shape`` and ``reduced_shape``; the einsum op's
abstract evaluation, which calls it, is in :mod:`kernel_ext.ops.linalg.products`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .core import Shape, broadcast_shapes


def einsum_shape(subscripts: str, shapes: Sequence[Shape | None]) -> Shape | None:
    """The result shape of ``np.einsum(subscripts, *operands)`` (explicit ``->`` or implicit
    output, ``...`` broadcasting, size-1 labels broadcasting as NumPy's einsum does)."""
    subs = subscripts.replace(" ", "")
    inputs, arrow, output = subs.partition("->")
    specs = inputs.split(",")
    if len(specs) != len(shapes):
        raise ValueError(
            "more operands provided to einstein sum function than specified in "
            "the subscripts string"
            if len(shapes) > len(specs)
            else "fewer operands provided to einstein sum function than specified in "
            "the subscripts string"
        )
    if any(s is None for s in shapes):
        return None
    dims, ellipses = _einsum_label_dims(specs, shapes)  # type: ignore[arg-type]
    sizes = _einsum_label_sizes(dims)
    ell = broadcast_shapes(*ellipses) or ()
    if not arrow:
        counts: dict[str, int] = {}
        for ch in inputs.replace(".", "").replace(",", ""):
            counts[ch] = counts.get(ch, 0) + 1
        return tuple(ell) + tuple(sizes[c] for c in sorted(counts) if counts[c] == 1)
    return _einsum_output_shape(output, sizes, tuple(ell))


def _einsum_label_dims(
    specs: list[str], shapes: Sequence[Shape]
) -> tuple[dict[str, list[int | None]], list[Shape]]:
    """Each label's dimensions across the operands, and each operand's ``...`` dimensions
    (NumPy's errors for an operand whose rank the subscripts do not match)."""
    dims: dict[str, list[int | None]] = {}
    ellipses = []
    for i, (spec, shape) in enumerate(zip(specs, shapes)):
        head, dots, tail = spec.partition("...")
        n_ell = len(shape) - len(head) - len(tail) if dots else 0
        if n_ell < 0 or (not dots and len(spec) != len(shape)):
            raise ValueError(
                "operand has more dimensions than subscripts given in einstein "
                "sum, but no '...' ellipsis provided to broadcast the extra "
                "dimensions."
                if len(spec) < len(shape)
                else f"einstein sum subscripts string contains too many subscripts for operand {i}"
            )
        ellipses.append(tuple(shape[len(head) : len(head) + n_ell]))
        labelled = tuple(shape[: len(head)]) + tuple(shape[len(shape) - len(tail) :])
        for label, d in zip(head + tail, labelled):
            dims.setdefault(label, []).append(d)
    return dims, ellipses


def _einsum_label_sizes(dims: dict[str, list[int | None]]) -> dict[str, int | None]:
    """Each label's size: its one size other than 1 (None if unknown), 1 if all are 1."""
    sizes: dict[str, int | None] = {}
    for label, ds in dims.items():
        known = {d for d in ds if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(
                "operands could not be broadcast together with remapped shapes; "
                f"label '{label}' has sizes {sorted(known)}"
            )
        sizes[label] = known.pop() if known else None if None in ds else 1
    return sizes


def _einsum_output_shape(output: str, sizes: dict[str, int | None], ell: Shape) -> Shape:
    """The shape of an explicit output (``->`` subscripts), with NumPy's errors."""
    head, dots, tail = output.partition("...")
    if not dots and ell:
        raise ValueError(
            "output has more dimensions than subscripts given in einstein sum, "
            "but no '...' ellipsis provided to broadcast the extra dimensions."
        )
    for c in head + tail:
        if c not in sizes:
            raise ValueError(
                f"einstein sum subscripts string included output subscript '{c}' "
                "which never appeared in an input"
            )
    return tuple(sizes[c] for c in head) + (ell if dots else ()) + tuple(sizes[c] for c in tail)
