"""AutoGraph: Python ``if``/``while``/``for`` on traced values become graph control flow.

``convert(fn)`` returns a version of ``fn`` whose control flow calls the runtime operators of
:mod:`kernel_ext.autograph.operators`; ``to_code(fn)`` shows its source. The rewrite itself is
in :mod:`kernel_ext.autograph.transformer`. Functions that cannot be converted (no source,
generators, constructs the rewrite does not handle) run as written, with an
:class:`~kernel_ext.errors.AutographWarning`.
"""

from __future__ import annotations

import ast
import inspect
import threading
import types
import warnings
from collections.abc import Callable

from .. import errors
from ..trace.state import UNCONVERTED
from . import operators
from .operators import set_loop_options
from .source import find_definition
from .transformer import Unconvertible, convert_tree

__all__ = ["convert", "set_loop_options", "to_code"]

_FACTORY_NAME_PREFIX = "__kx_converted_"

_cache: dict[types.CodeType, tuple[types.CodeType, str] | None] = {}
_lock = threading.Lock()


def _convert_code(fn: types.FunctionType) -> tuple[types.CodeType, str]:
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise Unconvertible("it is a generator or coroutine")
    if "__class__" in code.co_freevars:
        raise Unconvertible("it uses zero-argument super()")
    fn_node = convert_tree(find_definition(fn))
    text = ast.unparse(fn_node)
    # Inside the factory the converted ``def`` must not bind the function's own name: a
    # recursive function reads its name as a global (live), and a factory local of that name
    # would turn it into an empty closure cell. The code object gets its name back below.
    own_name = fn_node.name
    fn_node.name = _FACTORY_NAME_PREFIX + own_name
    freevars = list(code.co_freevars)
    factory = ast.FunctionDef(
        name="__kx_factory__",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=a) for a in ["ag__"] + freevars],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[fn_node, ast.Return(value=ast.Name(id=fn_node.name, ctx=ast.Load()))],
        # (type_params: Python 3.12's field, which 3.11's ast takes as a plain attribute)
        decorator_list=[],
        returns=None,
        type_params=[],
    )  # type: ignore[call-arg]
    ast.copy_location(factory, fn_node)
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    compiled = compile(module, code.co_filename, "exec")
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    inner = next(
        c
        for c in factory_code.co_consts
        if isinstance(c, types.CodeType) and c.co_name == fn_node.name
    )
    inner = inner.replace(
        co_name=own_name, co_qualname=inner.co_qualname.replace(fn_node.name, own_name)
    )
    return inner, text


def _lookup(fn: types.FunctionType) -> tuple[types.CodeType, str] | None:
    code = fn.__code__
    with _lock:
        if code in _cache:
            return _cache[code]
    try:
        result: tuple[types.CodeType, str] | None = _convert_code(fn)
    except Unconvertible as e:
        warnings.warn(
            f"AutoGraph could not convert '{fn.__qualname__}' and will run it as "
            f"written: {e}. Python control flow on traced values inside it will "
            "raise; kx.cond / kx.while_loop work everywhere.",
            errors.AutographWarning,
            stacklevel=4,
        )
        result = None
        UNCONVERTED[code] = str(e)
    with _lock:
        _cache[code] = result
    return result


def convert(fn: Callable) -> Callable:
    """``fn`` with its control flow converted (``fn`` itself if it cannot be converted)."""
    if getattr(fn, "__kx_autograph__", False):
        return fn
    if isinstance(fn, types.MethodType):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    if not isinstance(fn, types.FunctionType) or "ag__" in fn.__code__.co_freevars:
        return fn  # not Python code, or a lambda created by converted code (converted already)
    found = _lookup(fn)
    if found is None:
        return fn
    inner, _ = found
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(
        types.CellType(operators) if name == "ag__" else cells.get(name) or types.CellType()
        for name in inner.co_freevars
    )
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__wrapped__ = fn  # type: ignore[attr-defined]
    new.__kx_autograph__ = True  # type: ignore[attr-defined]
    return new


def to_code(fn: Callable) -> str:
    """The Python source AutoGraph generates for ``fn`` (a kx Function or a plain function)."""
    target = getattr(fn, "python_function", fn)
    if isinstance(target, types.MethodType):
        target = target.__func__
    if not isinstance(target, types.FunctionType):
        raise TypeError(f"to_code needs a Python function, got {type(fn).__name__}")
    try:
        return _convert_code(target)[1]
    except Unconvertible as e:
        raise ValueError(f"AutoGraph cannot convert '{target.__qualname__}': {e}") from None
