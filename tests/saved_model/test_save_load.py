"""kx.saved_model: save, load, call without the source; signatures, variables, control flow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.ir import OpKind

ROOT = Path(__file__).resolve().parents[2]


def _bitwise(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _bitwise(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _bitwise(a[k], b[k])
    else:
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


MODEL_SOURCE = textwrap.dedent("""
    import numpy as np
    import kernel_ext as kx

    class Model:
        def __init__(self):
            rng = np.random.default_rng(7)
            self.w = kx.Variable(rng.standard_normal((3, 2)), name="w")
            self.b = kx.Variable(np.zeros(2), name="b")

        @kx.function(backend="numpy")
        def predict(self, x):
            h = np.tanh(x @ self.w + self.b)
            if h.sum() > 0:          # a graph cond: h depends on x
                h = h * 2.0
            else:
                h = h - 1.0
            i = 0
            while np.max(np.abs(h)) > 0.5 and i < 20:   # a graph while
                h = h * 0.75
                i += 1
            return {"h": h, "steps": i}
""")


def _run(code: str, cwd: Path, extra_path: list[str] = ()) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *extra_path]))
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_loaded_model_runs_in_a_fresh_process_without_its_module_and_is_bitwise_equal(tmp_path):
    (tmp_path / "my_model.py").write_text(MODEL_SOURCE)
    _run(
        textwrap.dedent("""
        import numpy as np, kernel_ext as kx, my_model
        m = my_model.Model()
        xs = [np.linspace(-1, 1, 12).reshape(4, 3), -np.ones((4, 3)), np.ones((2, 3))]
        outs = [m.predict(x) for x in xs]
        kx.saved_model.save(m, "saved")
        np.savez("expected.npz", **{f"x{i}": x for i, x in enumerate(xs)},
                 **{f"h{i}": o["h"] for i, o in enumerate(outs)},
                 **{f"s{i}": np.asarray(o["steps"]) for i, o in enumerate(outs)})
    """),
        tmp_path,
        [str(tmp_path)],
    )
    (tmp_path / "my_model.py").unlink()
    for cache in tmp_path.glob("__pycache__"):
        for f in cache.iterdir():
            f.unlink()
        cache.rmdir()
    out = _run(
        textwrap.dedent("""
        import sys, numpy as np, kernel_ext as kx
        loaded = kx.saved_model.load("saved", backend="numpy")
        exp = np.load("expected.npz")
        for i in range(3):
            got = loaded.predict(exp[f"x{i}"])
            assert got["h"].dtype == exp[f"h{i}"].dtype and got["h"].shape == exp[f"h{i}"].shape
            assert got["h"].tobytes() == exp[f"h{i}"].tobytes(), i
            assert got["steps"] == exp[f"s{i}"], i
        assert "my_model" not in sys.modules
        print("ok", len(loaded.predict.signatures), *sorted(v.name for v in loaded.variables))
    """),
        tmp_path,
    )
    assert out.split() == ["ok", "2", "b", "w"]  # (4, 3) and (2, 3): two traces


def test_graph_files_hold_cond_and_while_subgraphs(tmp_path):
    @kx.function(backend="numpy")
    def f(x, n):
        total = x * 0
        for i in kx.range(n):  # a graph while over a traced bound
            total = total + x * i
        return kx.cond(total.sum() > 0, lambda: total, lambda: -total)

    x = np.arange(4.0)
    expected = f(x, np.int64(5))
    kx.saved_model.save(f, tmp_path / "m")
    graph = json.loads((tmp_path / "m" / "graphs" / "f_0.json").read_text())
    ops = {n["op"] for n in graph["nodes"]}
    assert {"while", "cond"} <= ops
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    _bitwise(loaded.f(x, np.int64(5)), expected)
    _bitwise(loaded.f(-x, np.int64(3)), f(-x, np.int64(3)))  # the other branch
    assert any(n.op is OpKind.WHILE for n in loaded.f.signatures[0].graph.nodes)


def test_signatures_with_none_dims_accept_any_size_and_refuse_other_ranks(tmp_path):
    @kx.function(input_signature=[kx.TensorSpec([None, 3], np.float32)], backend="numpy")
    def normalize(x):
        return (x - x.mean(axis=0)) / (x.std(axis=0) + np.float32(1e-6))

    kx.saved_model.save(normalize, tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "saved_model.json").read_text())
    (entry,) = manifest["functions"]["normalize"]
    assert entry["input_types"] == [{"kind": "tensor", "shape": [None, 3], "dtype": "<f4"}]
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    rng = np.random.default_rng(0)
    for n in (1, 5, 40):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        _bitwise(loaded.normalize(x), normalize(x))
    with pytest.raises(
        TypeError,
        match=r"argument 'x' is float32\[5, 4\], expected "
        r"float32\[None, 3\]",
    ):
        loaded.normalize(np.zeros((5, 4), np.float32))
    with pytest.raises(TypeError, match=r"argument 'x' is float64"):
        loaded.normalize(np.zeros((5, 3)))
    with pytest.raises(TypeError, match="normalize"):
        loaded.normalize()


def test_several_traces_dispatch_on_the_arguments(tmp_path):
    @kx.function(backend="numpy")
    def scale(x, factor=2):
        return x * factor

    scale(np.arange(3))
    scale(np.arange(3.0), factor=3)
    kx.saved_model.save(scale, tmp_path / "m")
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    _bitwise(loaded.scale(np.arange(3)), scale(np.arange(3)))
    _bitwise(loaded.scale(np.arange(3.0), factor=3), scale(np.arange(3.0), factor=3))
    _bitwise(loaded.scale(x=np.arange(3.0), factor=3), scale(np.arange(3.0), factor=3))
    with pytest.raises(TypeError, match="factor"):
        loaded.scale(np.arange(3.0), factor=5)  # a static value that was never traced


def test_listed_signatures_are_saved_without_calling_first(tmp_path):
    @kx.function(backend="numpy")
    def cube(x):
        return x**3

    kx.saved_model.save(cube, tmp_path / "m", signatures=[(kx.TensorSpec([None], np.int64),)])
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    _bitwise(loaded(np.arange(6)), np.arange(6) ** 3)


def _train_step_model():
    class Regressor:
        def __init__(self):
            self.w = kx.Variable(np.zeros(3), name="w")
            self.b = kx.Variable(np.float64(0.0), name="b")

        @kx.function(backend="numpy")
        def train_step(self, x, y):
            err = x @ self.w + self.b - y
            self.w.assign_sub(0.1 * (x.T @ err) / len(y))
            self.b.assign_sub(0.1 * err.mean())
            return (err**2).mean()

    return Regressor()


def test_variables_round_trip_and_training_continues_with_the_same_numbers(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.25
    model = _train_step_model()
    for _ in range(5):
        model.train_step(x, y)
    kx.saved_model.save(model, tmp_path / "m")
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    _bitwise(loaded.w.numpy(), model.w.numpy())
    _bitwise(loaded.b.numpy(), model.b.numpy())
    for _ in range(5):
        _bitwise(loaded.train_step(x, y), model.train_step(x, y))
    _bitwise(loaded.w.numpy(), model.w.numpy())
    _bitwise(loaded.b.numpy(), model.b.numpy())
    # a second save of the loaded model keeps training where it left off
    kx.saved_model.save(loaded, tmp_path / "m2")
    again = kx.saved_model.load(tmp_path / "m2", backend="numpy")
    _bitwise(again.w.numpy(), model.w.numpy())


def test_loaded_graphs_run_on_the_compiled_backend(tmp_path):
    pytest.importorskip("numba")

    @kx.function(backend="numpy")
    def f(x, y):
        return np.sqrt(x * x + y * y) - np.exp(-x)

    x, y = np.linspace(0, 3, 1000), np.linspace(-1, 2, 1000)
    expected = f(x, y)
    kx.saved_model.save(f, tmp_path / "m")
    loaded = kx.saved_model.load(tmp_path / "m", backend="numba")
    _bitwise(loaded.f(x, y), expected)  # elementwise kernels call NumPy's own loops
    assert loaded.f.signatures[0].backend == "numba"


def test_numpy_functions_run_as_opaque_calls_are_saved_by_name(tmp_path):
    @kx.function(backend="numpy")
    def f(x, w):
        return np.einsum(x, [0, 1], w, [1, 2]), np.split(x, 2)

    x, w = np.arange(12.0).reshape(4, 3), np.arange(9.0).reshape(3, 3)
    expected = f(x, w)
    assert any(n.op is OpKind.NUMPY_CALL for n in f.get_concrete_function(x, w).graph.nodes)
    kx.saved_model.save(f, tmp_path / "m")
    text = (tmp_path / "m" / "graphs" / "f_0.json").read_text()
    assert '"numpy_function"' in text
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    _bitwise(loaded.f(x, w), expected)


def test_save_replaces_a_saved_model_but_never_another_directory(tmp_path):
    @kx.function(backend="numpy")
    def f(x):
        return x + 1

    f(np.zeros(2))
    kx.saved_model.save(f, tmp_path / "m")
    kx.saved_model.save(f, tmp_path / "m")  # overwrite: fine
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a saved model"):
        kx.saved_model.save(f, tmp_path / "other")
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_a_newer_format_version_is_refused_naming_both_versions(tmp_path):
    @kx.function(backend="numpy")
    def f(x):
        return x + 1

    f(np.zeros(2))
    kx.saved_model.save(f, tmp_path / "m")
    manifest = tmp_path / "m" / "saved_model.json"
    data = json.loads(manifest.read_text())
    data["format_version"] = kx.saved_model.FORMAT_VERSION + 1
    manifest.write_text(json.dumps(data))
    with pytest.raises(
        kx.saved_model.SavedModelFormatError,
        match=rf"format version {kx.saved_model.FORMAT_VERSION + 1} is newer.*"
        rf"format version {kx.saved_model.FORMAT_VERSION}\b",
    ):
        kx.saved_model.load(tmp_path / "m")


def test_concrete_functions_resolves_functions_concrete_functions_and_holders():
    @kx.function(backend="numpy")
    def f(x):
        return x * 2

    cf = f.get_concrete_function(np.zeros(3))
    assert kx.saved_model.concrete_functions(f) == {"f": [cf]}
    assert kx.saved_model.concrete_functions(cf) == {"f": [cf]}
    model = _train_step_model()
    found = kx.saved_model.concrete_functions(
        model,
        signatures={
            "train_step": [
                (kx.TensorSpec([None, 3], np.float64), kx.TensorSpec([None], np.float64))
            ]
        },
    )
    assert list(found) == ["train_step"] and len(found["train_step"]) == 1
    with pytest.raises(TypeError, match=r"neither a kx\.function"):
        kx.saved_model.concrete_functions(object())
    with pytest.raises(ValueError, match="no traces"):
        kx.saved_model.concrete_functions(kx.function(lambda x: x))


def test_a_lambda_is_saved_under_an_identifier_name(tmp_path):
    f = kx.function(lambda x: x + 1, backend="numpy")
    f(np.zeros(2))
    kx.saved_model.save(f, tmp_path / "m")
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    assert list(loaded.functions) == ["lambda_"]
    _bitwise(loaded(np.zeros(2)), np.ones(2))


def test_numpys_own_result_types_come_back_as_themselves(tmp_path):
    @kx.function(backend="numpy")
    def spectrum(a):
        return np.linalg.eigh(a @ a.T)

    a = np.arange(9.0).reshape(3, 3) / 7
    expected = spectrum(a)
    kx.saved_model.save(spectrum, tmp_path / "m")
    got = kx.saved_model.load(tmp_path / "m", backend="numpy").spectrum(a)
    assert type(got) is type(expected)  # np.linalg's EighResult itself
    _bitwise(tuple(got), tuple(expected))
