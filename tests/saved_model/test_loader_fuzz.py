"""The loader on hostile and corrupt models: it raises SavedModelFormatError and nothing else.

A model with control flow, variables, constants and index arrays is saved once; each case
copies it and damages it (truncated or byte-altered files, JSON fields of the wrong type,
unknown tags, file names that climb out of the model, oversized files, a pickled array), then
loads it. Loading may succeed (an alteration can leave valid data) or raise
``SavedModelFormatError``; any other exception, or code from the file running, fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import random
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.saved_model import SavedModelFormatError, loading

CASES = 400


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    class Model:
        def __init__(self):
            self.w = kx.Variable(np.linspace(-1, 1, 6).reshape(3, 2), name="w")

        @kx.function(backend="numpy")
        def f(self, x, k):
            y = np.tanh(x @ self.w)
            y[0, np.array([1, 0])] = 2.0
            total = y.sum()
            for i in kx.range(k):
                total = total * 0.5 + i
            self.w.assign_add(np.ones((3, 2)) * 1e-3)
            return kx.cond(total > 0, lambda: y, lambda: -y), {"t": total}

    m = Model()
    m.f(np.ones((4, 3)), np.int64(3))
    path = tmp_path_factory.mktemp("fuzz") / "model"
    kx.saved_model.save(m, path)
    return path


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _json_paths(obj, prefix=()):
    """Every (path, value) inside a JSON document."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _json_paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _json_paths(v, prefix + (i,))


def _set(doc, path, value):
    if not path:
        return value
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


WRONG_VALUES = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    "",
    "x",
    "../../etc/passwd",
    [],
    {},
    [[]],
    {"$": "bogus"},
    {"$": "tuple"},
    {"$": "node", "name": "nope"},
    {"$": "array", "file": "../saved_model.json"},
    {"$": "numpy_function", "name": "os.system"},
    {"$": "ufunc", "name": "__class__"},
    {"$": "dtype", "str": "O"},
    {"$": "dtype", "str": "<U8"},
    {"$": "error", "type": "SystemExit", "args": {"$": "tuple", "items": []}},
    {"$": "float", "bits": "zz"},
    {"$": "scalar", "dtype": "<f8", "bytes": "00"},
    {"kind": "tensor", "shape": [-1], "dtype": "<f8"},
    {"kind": "namedtuple"},
]


def _damage(root: Path, rng: random.Random) -> str:
    files = _files(root)
    target = rng.choice(files)
    kind = rng.randrange(6)
    data = target.read_bytes()
    if kind == 0:
        target.write_bytes(data[: rng.randrange(len(data))])
        return f"truncate {target.name}"
    if kind == 1:
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        target.write_bytes(bytes(buf))
        return f"alter bytes of {target.name}"
    jsons = [p for p in files if p.suffix == ".json"]
    target = rng.choice(jsons)
    doc = json.loads(target.read_text())
    paths = list(_json_paths(doc))
    path, _ = rng.choice(paths)
    if kind == 2:
        doc = _set(doc, path, rng.choice(WRONG_VALUES))
        what = f"set {target.name}{list(path)}"
    elif kind == 3:  # drop a field or an item
        if not path:
            return "nothing"
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        what = f"drop {target.name}{list(path)}"
    elif kind == 4:  # file names that climb out of the model
        name = rng.choice(
            [
                "../saved_model.json",
                "/etc/passwd",
                "..",
                "a/../../b.npy",
                "arrays/../../x.npy",
                "C:\\x.npy",
                "a0.npy\x00.json",
                "v0.npy",
            ]
        )
        strings = [p for p, v in paths if isinstance(v, str)]
        doc = _set(doc, rng.choice(strings) if strings else path, name)
        what = f"file name {name!r} in {target.name}"
    else:  # deep nesting (written as text: json.dumps itself would recurse too deeply)
        n = rng.choice([50, 5000])
        doc = _set(doc, path, "@@DEEP@@")
        target.write_text(json.dumps(doc).replace('"@@DEEP@@"', "[" * n + "0" + "]" * n))
        return f"nesting {n} deep at {target.name}{list(path)}"
    target.write_text(json.dumps(doc))
    return what


def _load_or_format_error(path: Path, what: str) -> None:
    try:
        loaded = kx.saved_model.load(path, backend="numpy")
    except SavedModelFormatError:
        return
    except Exception as e:  # noqa: BLE001 - the failure this test exists to find
        pytest.fail(f"{what}: load raised {type(e).__name__}: {e}")
    # what loads may compute other numbers (an altered constant), or refuse the call, but
    # never crash the process
    for fn in loaded.functions.values():
        try:
            with _time_limit(2.0):
                fn(np.ones((4, 3)), np.int64(3))
        except Exception:  # noqa: BLE001 - a Python exception is a fine answer here
            pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Stop the call after ``seconds`` (a TimeoutError from the NumPy executor's Python
    loop): an altered constant can be a loop's trip count, which makes a loop of 10^18
    iterations — valid data, and nothing the loader can tell from a bad file."""

    def stop(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_damaged_models_only_ever_raise_saved_model_format_error(saved, tmp_path):
    rng = random.Random(20261128)
    for i in range(CASES):
        case = tmp_path / f"case{i}"
        shutil.copytree(saved, case)
        what = _damage(case, rng)
        _load_or_format_error(case, what)
        shutil.rmtree(case)


def test_the_undamaged_model_loads_and_runs(saved):
    loaded = kx.saved_model.load(saved, backend="numpy")
    y, info = loaded.f(np.ones((4, 3)), np.int64(3))
    assert y.shape == (4, 2) and info["t"].dtype == np.float64


def test_oversized_files_are_refused_before_they_are_read(saved, tmp_path, monkeypatch):
    case = tmp_path / "m"
    shutil.copytree(saved, case)
    monkeypatch.setattr(loading, "MAX_JSON_BYTES", 200)
    with pytest.raises(SavedModelFormatError, match="more than the 200"):
        kx.saved_model.load(case, backend="numpy")
    monkeypatch.undo()
    monkeypatch.setattr(loading, "MAX_ARRAY_BYTES", 64)
    with pytest.raises(SavedModelFormatError, match="more than the 64"):
        kx.saved_model.load(case, backend="numpy")


class _Payload:
    def __reduce__(self):
        return (os.mkdir, (str(_Payload.marker),))


def test_a_pickled_array_is_refused_and_never_unpickled(saved, tmp_path):
    case = tmp_path / "m"
    shutil.copytree(saved, case)
    _Payload.marker = tmp_path / "pwned"
    array = np.empty(1, dtype=object)
    array[0] = _Payload()
    (case / "arrays" / "v0.npy").unlink()
    np.save(case / "arrays" / "v0.npy", array, allow_pickle=True)
    assert pickle.dumps(_Payload())  # (the payload is a real one)
    with pytest.raises(SavedModelFormatError, match=r"v0\.npy"):
        kx.saved_model.load(case, backend="numpy")
    assert not _Payload.marker.exists()


def test_a_file_name_outside_the_model_is_refused(saved, tmp_path):
    case = tmp_path / "m"
    shutil.copytree(saved, case)
    manifest = json.loads((case / "saved_model.json").read_text())
    manifest["arrays"][0] = "../../outside.npy"
    (case / "saved_model.json").write_text(json.dumps(manifest))
    with pytest.raises(SavedModelFormatError, match="not a plain file name"):
        kx.saved_model.load(case, backend="numpy")


def test_a_file_that_links_elsewhere_is_refused(saved, tmp_path):
    case = tmp_path / "m"
    shutil.copytree(saved, case)
    outside = tmp_path / "outside.npy"
    np.save(outside, np.zeros(3))
    target = case / "arrays" / "v0.npy"
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(SavedModelFormatError, match="a link"):
        kx.saved_model.load(case, backend="numpy")


def test_a_missing_or_non_model_directory_is_a_format_error(tmp_path):
    with pytest.raises(SavedModelFormatError, match="not a directory"):
        kx.saved_model.load(tmp_path / "nothing")
    with pytest.raises(SavedModelFormatError, match="missing"):
        kx.saved_model.load(tmp_path)


def test_callables_outside_numpys_allow_list_are_refused_by_name(tmp_path):
    @kx.function(backend="numpy")
    def f(x, w):
        return np.einsum(x, [0, 1], w, [1, 2])  # an opaque call, saved by name

    f(np.ones((2, 3)), np.ones((3, 3)))
    kx.saved_model.save(f, tmp_path / "m")
    graph_file = tmp_path / "m" / "graphs" / "f_0.json"
    text = graph_file.read_text()
    assert '"name":"numpy.einsum"' in text
    # (np.load and np.save: NumPy's, but files in and out are never allowed)
    for hostile in (
        "os.system",
        "builtins.eval",
        "numpy.load",
        "numpy.save",
        "numpy.add.at",
        "subprocess.run",
    ):
        graph_file.write_text(text.replace('"name":"numpy.einsum"', f'"name":"{hostile}"'))
        with pytest.raises(
            SavedModelFormatError,
            match=rf"'{hostile}' is not a NumPy "
            "function this loader allows",
        ):
            kx.saved_model.load(tmp_path / "m", backend="numpy")
