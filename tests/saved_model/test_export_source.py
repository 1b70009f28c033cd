"""kx.saved_model.export_source: one .py file, NumPy only, the same bits as the executor."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernel_ext as kx

# The exported file must run where kernel_ext cannot be imported: the child blocks it
# (`python -I` alone would still find it through the environment's site-packages).
CHILD_PRELUDE = textwrap.dedent("""
    import sys
    sys.modules["kernel_ext"] = None
    try:
        import kernel_ext
    except ImportError:
        pass
    else:
        raise SystemExit("kernel_ext is importable")
    sys.path.insert(0, sys.argv[1])
    import numpy as np
""")


def _child(code: str, folder) -> str:
    done = subprocess.run(
        [sys.executable, "-I", "-c", CHILD_PRELUDE + textwrap.dedent(code), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_exported_source_runs_without_kernel_ext_and_matches_bitwise(tmp_path):
    @kx.function(backend="numpy")
    def model(x, w, steps):
        h = np.tanh(x @ w)
        h[:, 0] = np.where(h[:, 0] > 0, h[:, 0], 0.01 * h[:, 0])
        total = h.sum()
        for i in kx.range(steps):
            total = total * 0.5 + i
        best = kx.cond(total > 0, lambda: h.max(axis=0), lambda: h.min(axis=0))
        return {"h": h, "best": best, "total": total}

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((5, 3)), rng.standard_normal((3, 4))
    for steps in (np.int64(2), np.int64(7)):
        model(x, w, steps)
    model(x[:2], w, np.int64(3))  # a second signature
    kx.saved_model.export_source(model, tmp_path / "model_export.py")
    assert (tmp_path / "model_export.npz").exists() or "_ARRAYS" not in (
        tmp_path / "model_export.py"
    ).read_text()
    np.savez(tmp_path / "inputs.npz", x=x, w=w)
    _child(
        """
        import model_export
        d = np.load(sys.argv[1] + "/inputs.npz")
        out = {}
        for name, x in (("full", d["x"]), ("two", d["x"][:2])):
            for steps in (2, 7):
                r = model_export.model(x, d["w"], np.int64(steps))
                for k, v in r.items():
                    out[f"{name}_{steps}_{k}"] = np.asarray(v)
        np.savez(sys.argv[1] + "/outputs.npz", **out)
    """,
        tmp_path,
    )
    got = np.load(tmp_path / "outputs.npz")
    for name, xs in (("full", x), ("two", x[:2])):
        for steps in (2, 7):
            expected = model(xs, w, np.int64(steps))
            for k, v in expected.items():
                assert got[f"{name}_{steps}_{k}"].tobytes() == np.asarray(v).tobytes()


def test_exported_variables_keep_training_like_the_original(tmp_path):
    class Regressor:
        def __init__(self):
            self.w = kx.Variable(np.zeros(3), name="w")

        @kx.function(backend="numpy")
        def step(self, x, y):
            err = x @ self.w - y
            self.w.assign_sub(0.1 * (x.T @ err) / len(y))
            return (err**2).mean()

    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 3))
    y = x @ np.array([1.0, 2.0, -1.0])
    model = Regressor()
    model.step(x, y)
    kx.saved_model.export_source(model, tmp_path / "regressor.py")
    np.savez(tmp_path / "xy.npz", x=x, y=y)
    _child(
        """
        import regressor
        d = np.load(sys.argv[1] + "/xy.npz")
        losses = [regressor.step(d["x"], d["y"]) for _ in range(4)]
        np.savez(sys.argv[1] + "/trained.npz", losses=np.array(losses),
                 w=regressor.variables["w"].numpy())
    """,
        tmp_path,
    )
    losses = [model.step(x, y) for _ in range(4)]
    got = np.load(tmp_path / "trained.npz")
    assert got["losses"].tobytes() == np.array(losses).tobytes()
    assert got["w"].tobytes() == model.w.numpy().tobytes()


def test_a_signature_the_export_does_not_hold_raises_type_error(tmp_path):
    @kx.function(backend="numpy")
    def double(x):
        return x * 2

    double(np.arange(3.0))
    kx.saved_model.export_source(double, tmp_path / "double_export.py")
    out = _child(
        """
        import double_export
        print(double_export.double(np.arange(3.0)).tolist())
        try:
            double_export.double(np.arange(3))
        except TypeError as e:
            print("TypeError", "double" in str(e))
    """,
        tmp_path,
    )
    assert out.split("\n")[:2] == ["[0.0, 2.0, 4.0]", "TypeError True"]


def test_export_source_refuses_what_has_no_source_form(tmp_path):
    rng = np.random.default_rng(0)

    @kx.function(backend="numpy")
    def noisy(x):
        return x + rng.normal(size=x.shape)

    noisy(np.zeros(2))
    with pytest.raises(kx.saved_model.SaveError, match=r"Generator.*Fix"):
        kx.saved_model.export_source(noisy, tmp_path / "noisy.py")
    with pytest.raises(ValueError, match=r"\.py file"):
        kx.saved_model.export_source(noisy, tmp_path / "noisy.txt")
