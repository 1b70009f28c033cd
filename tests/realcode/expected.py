"""Recorded outcomes of the real-code corpus: every (case, path) that does not PASS.

Regenerate with ``python benchmarks/realcode.py --write-known`` after a change that
fixes cases; the test suite fails until a case that now passes is removed here.
"""

KNOWN: dict[tuple[str, str], str] = {
    ("histogram_by_hand", "auto"): "ERROR",
    ("histogram_by_hand", "jit"): "ERROR",
    ("histogram_by_hand", "numpy"): "ERROR",
    # Code in the style of outside suites (corpus_outside_style.py): constructs being fixed
    # crc32_bitwise: np.uint32(t) of a traced 0-d value raises TracingConversionError (then
    # `crc >>= 1` after a traced if)
    ("crc32_bitwise", "auto"): "ERROR",
    ("crc32_bitwise", "jit"): "ERROR",
    ("crc32_bitwise", "numpy"): "ERROR",
    # crc8_bitwise: `crc <<= 1` on the 0-d result of a traced if raises UnsupportedOpError
    ("crc8_bitwise", "auto"): "ERROR",
    ("crc8_bitwise", "jit"): "ERROR",
    ("crc8_bitwise", "numpy"): "ERROR",
    # reshape_by_assignment: `y.shape = (3, 4)`: Tensor.shape has no setter
    ("reshape_by_assignment", "auto"): "ERROR",
    ("reshape_by_assignment", "jit"): "ERROR",
    ("reshape_by_assignment", "numpy"): "ERROR",
    # round_to_tens: np.round / np.around of an int64 array returns float64
    ("round_to_tens", "auto"): "WRONG",
    ("round_to_tens", "jit"): "WRONG",
    ("round_to_tens", "numpy"): "WRONG",
    # sample_std_correction: np.std / np.var ignore correction=
    ("sample_std_correction", "auto"): "WRONG",
    ("sample_std_correction", "jit"): "WRONG",
    ("sample_std_correction", "numpy"): "WRONG",
}
