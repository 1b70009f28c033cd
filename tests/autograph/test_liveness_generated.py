"""Generated programs: liveness never turns a name into a silent wrong value.

Each program is a loop whose body assigns temporaries in one branch of an ``if`` on a traced
value, guards the rest of the body with a traced ``continue``, and reads (or does not read)
the temporaries afterwards — in the iteration, in the next one, or after the loop. Traced
with AutoGraph it must either give eager NumPy's result and leave the arguments as eager
NumPy does, or stop with AutoGraph's clear error that a name is assigned in one branch only;
where every read follows an assignment on every path, it must give the result.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import kernel_ext as kx

SEEDS = range(48)


def _program(rng: random.Random) -> tuple[str, bool]:
    """The source of ``f(x, out)`` and whether every read of a temporary is defined."""
    safe = True
    lines = ["import numpy as np", "", "", "def f(x, out):", "    acc = x[0] * 0.0"]
    if rng.random() < 0.5:
        lines.append("    keep = x[0]")  # defined before the loop: may be read anywhere
        keep_defined = True
    else:
        keep_defined = False
    header = rng.choice(["    for i in range(x.shape[0]):", "    for v in x:"])
    lines.append(header)
    item = "x[i]" if "range" in header else "v"
    if rng.random() < 0.5:
        lines += [
            f"        if {item} < {rng.choice(['-1.0', '-0.5', '0.0'])}:",
            "            continue",
        ]
    lines.append(f"        t = {item} * {rng.choice(['2.0', '0.5', '3.0'])}")
    branch_names = []
    lines.append(f"        if t > {rng.choice(['0.0', '0.5', '1.0'])}:")
    lines.append("            margin = t - 1.0")
    branch_names.append("margin")
    lines.append("            acc = acc + margin")
    if rng.random() < 0.5:
        lines.append("            keep = margin")
    if rng.random() < 0.5:
        lines += ["        else:", "            other = t + 1.0", "            acc = acc - other"]
    reads = rng.random()
    if reads < 0.25:
        lines.append("        acc = acc + margin * 0.5")  # read in the iteration
        safe = False
    elif reads < 0.4:
        lines.append("        out[0] = out[0] + t")  # a write to an argument, every iteration
    if keep_defined and rng.random() < 0.5:
        lines.append("    acc = acc + keep")  # read after the loop
    elif not keep_defined and "keep = margin" in "\n".join(lines) and rng.random() < 0.5:
        lines.append("    acc = acc + keep")  # maybe never assigned: eager may fail too
        safe = False
    lines.append("    return acc")
    return "\n".join(lines) + "\n", safe


def _load(tmp_path: Path, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.f


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_one_branch_temporaries_match_numpy_or_stop_clearly(tmp_path, seed):
    rng = random.Random(seed)
    text, safe = _program(rng)
    f = _load(tmp_path, f"kx_liveness_case_{seed}", text)
    data = np.random.default_rng(seed)
    for n in (1, 6):
        x = data.standard_normal(n) * 2
        out = np.zeros(1)
        eager_args = (x.copy(), out.copy())
        try:
            want = f(*eager_args)
        except NameError:  # UnboundLocalError too: the program reads an unassigned name
            want = None
        traced_args = (x.copy(), out.copy())
        try:
            got = kx.function(f, backend="numpy")(*traced_args)
        except (ValueError, NameError) as e:
            assert not safe, f"{text}\nraised {e!r}"
            assert "assigned" in str(e), f"{text}\nraised {e!r}"
            continue
        assert want is not None, f"{text}\neager NumPy raised, the traced function did not"
        assert type(got) is type(want), text
        assert np.array_equal(np.asarray(got), np.asarray(want)), f"{text}\n{got} != {want}"
        for g, w in zip(traced_args, eager_args):
            assert np.array_equal(g, w), f"{text}\narguments differ: {g} != {w}"


def test_the_generated_programs_include_safe_ones_of_every_loop_form():
    texts = [_program(random.Random(seed)) for seed in SEEDS]
    assert sum(safe for _, safe in texts) >= 12
    assert any("for v in x" in t and s for t, s in texts)
    assert any("range" in t and s and "continue" in t for t, s in texts)


def test_a_program_shape_that_old_autograph_refused_now_runs(tmp_path):
    text = (
        "import numpy as np\n\n\ndef f(x, out):\n    acc = x[0] * 0.0\n"
        "    for v in x:\n        if v < 0.0:\n            continue\n"
        "        t = v * 2.0\n        if t > 0.5:\n            margin = t - 1.0\n"
        "            acc = acc + margin\n    return acc\n"
    )
    f = _load(tmp_path, "kx_liveness_fixed", text)
    x = np.array([1.0, -2.0, 0.1, 3.0])
    got = kx.function(f, backend="numpy")(x, np.zeros(1))
    want = f(x, np.zeros(1))
    assert got == want and type(got) is type(want)
