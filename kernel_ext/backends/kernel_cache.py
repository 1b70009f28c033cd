"""The on-disk kernel cache: generated kernel sources as importable modules.

Numba can cache compiled code only for functions defined in a real source file, so each
generated kernel module is written to the cache folder under a name derived from the hash of
its source *and* of the versions that shape its meaning (Python, NumPy, Numba, llvmlite, the
code generator and :mod:`.numba_decorators`), then imported. Numba's ``cache=True`` stores the
compiled code beside it (in ``__pycache__``, or under ``NUMBA_CACHE_DIR`` when that is set),
so a later process with the same kernel loads machine code instead of compiling.

Where: ``$KERNEL_EXT_CACHE_DIR``, else ``$XDG_CACHE_HOME/kernel_ext``, else
``~/.cache/kernel_ext`` (subfolder ``kernels``). Files are never rewritten in place (the name
is the content hash, and Numba keys its index on the file's timestamp): a new file is written
to a temporary name and renamed, so concurrent processes never see half a file.

A corrupt entry — a source whose embedded hash does not match its text, or Numba cache files
that fail to load — is detected, deleted and rebuilt (:func:`purge`).
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from types import ModuleType

_PACKAGE = "kernel_ext_kernels"  # pseudo-package the kernel modules are registered under
_lock = threading.Lock()


def cache_root() -> Path:
    """The folder holding kernel_ext's caches (created on demand)."""
    env = os.environ.get("KERNEL_EXT_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "kernel_ext"


def kernel_dir() -> Path:
    path = cache_root() / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=1)
def versions_tag() -> str:
    """Everything besides the source text that changes what a kernel computes."""
    from importlib.metadata import PackageNotFoundError, version

    import numpy as np

    from .codegen import CODEGEN_VERSION

    parts = [sys.version.split()[0], np.__version__, f"codegen{CODEGEN_VERSION}"]
    for dist in ("numba", "llvmlite"):
        try:
            parts.append(f"{dist}{version(dist)}")
        except PackageNotFoundError:  # pragma: no cover
            parts.append(f"{dist}?")
    try:
        from .numba_decorators import ABI

        parts.append(f"abi{ABI}")
    except ImportError:  # pragma: no cover - numba missing
        pass
    return "|".join(parts)


def entry_name(source: str) -> str:
    """The module name (and file stem) of a kernel source in this installation."""
    digest = hashlib.sha256((versions_tag() + "\n" + source).encode()).hexdigest()
    return f"kx_{digest[:32]}"


def _body_hash(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def _write(path: Path, body: str) -> None:
    text = f"# kx-hash {_body_hash(body)}\n{body}"
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".py", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _valid(path: Path, body: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    head, _, rest = text.partition("\n")
    return head == f"# kx-hash {_body_hash(body)}" and rest == body


def purge(name: str) -> int:
    """Delete a kernel's source and every Numba cache file of it; returns files removed."""
    root = kernel_dir()
    patterns = [str(root / f"{name}.py"), str(root / "__pycache__" / f"{name}.*")]
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    if numba_dir:
        patterns.append(os.path.join(numba_dir, "**", f"{name}.*"))
    removed = 0
    for pattern in patterns:
        for file in glob.glob(pattern, recursive=True):
            try:
                os.unlink(file)
                removed += 1
            except OSError:
                pass
    sys.modules.pop(f"{_PACKAGE}.{name}", None)
    return removed


def load(source: str) -> tuple[ModuleType, str, bool]:
    """Import the kernel module for ``source``: ``(module, name, was_on_disk)``.

    A file whose content does not match its hash is treated as corrupt: deleted (with its
    compiled code) and rewritten.
    """
    name = entry_name(source)
    qualified = f"{_PACKAGE}.{name}"
    with _lock:
        module = sys.modules.get(qualified)
        if module is not None:
            return module, name, True
        path = kernel_dir() / f"{name}.py"
        on_disk = path.exists()
        if on_disk and not _valid(path, source):
            purge(name)
            on_disk = False
        if not on_disk:
            _write(path, source)
        spec = importlib.util.spec_from_file_location(qualified, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(qualified, None)
            raise
        return module, name, on_disk


def forget(name: str) -> None:
    """Drop an imported kernel module (so the next :func:`load` reads the file again)."""
    sys.modules.pop(f"{_PACKAGE}.{name}", None)


__all__ = ["cache_root", "entry_name", "forget", "kernel_dir", "load", "purge", "versions_tag"]
