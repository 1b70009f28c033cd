"""The on-disk kernel cache: entries are reused across processes, corrupt ones rebuilt."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import codegen, kernel_cache, numba_cpu
from kernel_ext.passes.fusion import partition


@pytest.fixture(autouse=True)
def _numba_cache_beside_the_kernels(monkeypatch):
    """Numba's compiled code in the kernel folder's ``__pycache__``, where these tests look,
    even when the run set ``NUMBA_CACHE_DIR`` (as ``.ci/run`` does): Numba read it when it was
    imported, so its config is what counts."""
    from numba.core import config

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(config, "CACHE_DIR", "")


def _kernel_source(salt: float) -> codegen.KernelSource:
    x = np.ones(10, np.float32)
    graph = kx.function(lambda x: x * salt + 1.0, backend="numpy").get_concrete_function(x).graph
    (seg,) = partition(graph)
    return codegen.generate(seg)


def _run(dispatcher) -> np.ndarray:
    x = np.arange(10, dtype=np.float32)
    out = np.empty(10, np.float32)
    assert dispatcher(0, 10, x, out) is False
    return out


def test_a_kernel_is_compiled_once_then_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    ksrc = _kernel_source(3.0)
    first, hit = numba_cpu.compile_variant(ksrc, "flat")
    assert not hit
    name = kernel_cache.entry_name(ksrc.source)
    assert os.path.exists(tmp_path / "kernels" / f"{name}.py")
    assert glob.glob(str(tmp_path / "kernels" / "__pycache__" / f"{name}*.nbi"))
    kernel_cache.forget(name)  # as a new process would: import the file, load the code
    second, hit = numba_cpu.compile_variant(ksrc, "flat")
    assert hit and second is not first
    np.testing.assert_array_equal(_run(second), np.arange(10, dtype=np.float32) * 3 + 1)


def test_a_corrupt_source_entry_is_detected_and_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_EXT_CACHE_DIR", str(tmp_path))
    ksrc = _kernel_source(5.0)
    numba_cpu.compile_variant(ksrc, "flat")
    name = kernel_cache.entry_name(ksrc.source)
    path = tmp_path / "kernels" / f"{name}.py"
    path.write_text(path.read_text().replace("K0 =", "K0 = 2 * "))  # tampered text
    kernel_cache.forget(name)
    dispatcher, hit = numba_cpu.compile_variant(ksrc, "flat")
    assert not hit
    assert path.read_text().endswith(ksrc.source)
    np.testing.assert_array_equal(_run(dispatcher), np.arange(10, dtype=np.float32) * 5 + 1)


def test_corrupt_compiled_code_is_deleted_and_recompiled(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_EXT_CACHE_DIR", str(tmp_path))
    ksrc = _kernel_source(7.0)
    numba_cpu.compile_variant(ksrc, "flat")
    name = kernel_cache.entry_name(ksrc.source)
    files = glob.glob(str(tmp_path / "kernels" / "__pycache__" / f"{name}*"))
    assert files
    for f in files:
        with open(f, "wb") as fh:
            fh.write(b"\x80garbage")
    kernel_cache.forget(name)
    dispatcher, _ = numba_cpu.compile_variant(ksrc, "flat")
    np.testing.assert_array_equal(_run(dispatcher), np.arange(10, dtype=np.float32) * 7 + 1)


def test_a_new_process_loads_kernels_from_disk(tmp_path):
    code = (
        "import numpy as np, kernel_ext as kx\n"
        "from kernel_ext.backends import fused\n"
        "fused.set_synchronous(True)\n"
        "f = kx.function(lambda x: np.tanh(x * 0.25 + 1.5) * x, backend='numba')\n"
        "x = np.linspace(0, 1, 100)\n"
        "f(x)\n"
        "print(f.get_concrete_function(x).executable.segments[0]['cache'])\n"
    )
    env = dict(os.environ, KERNEL_EXT_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert runs == ["flat:miss", "flat:hit"]


def test_a_kernel_whose_executables_are_gone_is_not_compiled():
    import threading

    from kernel_ext.backends import compiler

    class Handle:  # the compiler's side of a KernelHandle
        def __init__(self, orphaned):
            self.state, self.compiled, self._lock = {"nd": "queued"}, [], threading.Lock()
            self._orphaned = orphaned

        def orphaned(self):
            return self._orphaned

        def compile(self, variant):
            self.compiled.append(variant)

    gone, live = Handle(True), Handle(False)
    for h in (gone, live):
        compiler.COMPILER.defer(h, "nd")
    compiler.COMPILER.flush()
    assert compiler.COMPILER.wait(60)
    assert gone.compiled == [] and "nd" not in gone.state  # asked for again on demand
    assert live.compiled == ["nd"]


def test_the_background_compiler_takes_segment_kernels_before_whole_graphs():
    from kernel_ext.backends.compiler import _Compiler

    order = []

    class Handle:
        def __init__(self, name):
            self.name = name

        def orphaned(self):
            return False

        def compile(self, variant):
            order.append((self.name, variant))

    compiler = _Compiler()
    compiler.defer(Handle("tier-up"), "graph_c")
    compiler.defer(Handle("new function"), "flat")
    compiler.defer(Handle("other tier-up"), "graph_a")
    compiler.defer(Handle("new function"), "nd")
    compiler.flush()
    assert compiler.wait(30)
    assert order == [
        ("new function", "flat"),
        ("new function", "nd"),
        ("tier-up", "graph_c"),
        ("other tier-up", "graph_a"),
    ]
    compiler.shutdown()
