"""``export_source(obj, path)``: one standalone ``.py`` file that needs NumPy only.

The NumPy executor already compiles each graph to straight-line Python
(:func:`~kernel_ext.backends.generate_source`); what that code calls it binds as globals: NumPy
functions, the reference interpreter's lowerings (closures over a node's attrs), constants.
This module writes those globals out as source too — NumPy objects by name, Python values as
literals, arrays in an ``.npz`` beside the file (read with ``allow_pickle=False``), and every
function of kernel_ext the code calls as its own source (``inspect``; closures rebuilt by a
factory taking their captured values) — so the file computes exactly what the executor
computes, bit for bit, with kernel_ext not installed.

The file defines one function per saved function (dispatching on the saved signatures, as a
loaded model does) and ``variables``, a dict of the model's variables.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import inspect
import math
import os
import re
import struct
import textwrap
import types
from typing import Any

import numpy as np

from ..backends import generate_source
from ..trace import Dict, Literal, Sequence_, TensorSpec, Variable
from .codec import numpy_function_name, numpy_result_types, random_function_name
from .format import SaveError
from .saving import Trace, functions_of, variables_held

#: Standard-library modules the exported file may import (besides NumPy).
STDLIB = frozenset(
    {
        "operator",
        "math",
        "functools",
        "itertools",
        "copy",
        "sys",
        "warnings",
        "struct",
        "numbers",
        "collections",
        "keyword",
        "dataclasses",
        "enum",
        "abc",
        "importlib",
        "typing",  # (typing.cast in the package's own functions: the identity)
    }
)

_VARIABLE_CLASS = '''
class Variable:
    """A kx.Variable of the exported model: its value, read and written by the graphs."""

    def __init__(self, value, name):
        value.setflags(write=False)
        self._storage, self.name = value, name
        self.dtype, self.shape = value.dtype, value.shape

    @property
    def storage(self):
        return self._storage

    def peek(self):
        return self._storage

    def numpy(self):
        return self._storage.copy()

    def update_in_place(self, kind, value):
        return False  # (always replaced: the same bits as kernel_ext's in-place update)

    def store(self, value, owned=False):
        if owned and type(value) is np.ndarray and value.dtype == self.dtype and \\
                value.shape == self.shape and value.flags.owndata:
            value.setflags(write=False)
            self._storage = value
            return
        arr = np.asarray(value)
        if arr.dtype != self.dtype:
            if not np.can_cast(arr.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"cannot assign a {arr.dtype} value to variable "
                                f"'{self.name}' of dtype {self.dtype} (same_kind casting)")
            arr = arr.astype(self.dtype)
        if arr.shape != self.shape:
            arr = np.broadcast_to(arr, self.shape)
        new = np.array(arr, copy=True)
        new.setflags(write=False)
        self._storage = new
'''

_SIGNATURE_HELPERS = """
def _fits(value, spec):
    kind = spec[0]
    if kind == "tensor":
        if not isinstance(value, (np.ndarray, np.generic)) or value.dtype != np.dtype(spec[2]):
            return False
        shape = spec[1]
        return shape is None or (len(shape) == value.ndim and all(
            d is None or d == s for d, s in zip(shape, value.shape)))
    if kind == "literal":
        return type(value) is type(spec[1]) and (value == spec[1] or value != value)
    if kind in ("tuple", "list"):
        return type(value) is (tuple if kind == "tuple" else list) and \\
            len(value) == len(spec[1]) and all(_fits(v, s) for v, s in zip(value, spec[1]))
    return isinstance(value, dict) and set(value) == set(spec[1]) and all(
        _fits(value[k], s) for k, s in spec[1].items())


def _instance(cls, state):
    obj = object.__new__(cls)
    obj.__dict__.update(state)
    return obj


def _dispatch(name, signatures, args, kwargs):
    for signature, types_, run, violated in signatures:
        try:
            bound = signature.bind_partial(*args, **kwargs)
            for (param, spec) in zip(signature.parameters, types_):
                if spec[0] == "literal":
                    bound.arguments.setdefault(param, spec[1])
            bound = signature.bind(*bound.args, **bound.kwargs)
        except TypeError:
            continue
        values = [bound.arguments.get(p, () if signature.parameters[p].kind is
                                      inspect.Parameter.VAR_POSITIONAL else {})
                  for p in signature.parameters]
        if all(_fits(v, s) for v, s in zip(values, types_)):
            reason = None if violated is None else violated(values)
            if reason is not None:
                raise ValueError(f"{name}: {reason}; the exported function assumed otherwise "
                                 "when it was traced")
            return run(*values)
    raise TypeError(f"{name}() cannot run these arguments; its saved signatures are: "
                    + "; ".join(str(s[0]) for s in signatures))
"""


#: Module-level names of the exported file that a saved function may not take.
_RESERVED = frozenset(
    {"np", "Variable", "variables", "inspect", "os", "struct", "functools", "annotations"} | STDLIB
)


class Exporter:
    """Python source for the values a generated graph function refers to."""

    def __init__(self) -> None:
        self.imports: set[str] = {"numpy as np"}
        self.lines: list[str] = []  # definitions, in dependency order
        self.arrays: dict[str, np.ndarray] = {}
        self.exprs: dict[int, str] = {}  # id(object) -> the expression naming it
        self.keep: list[Any] = []  # (keeps the objects of ``exprs`` alive)
        self.globals: dict[str, Any] = {}  # module-level names taken -> their object
        self.variables: dict[int, str] = {}
        self._count = 0

    def fresh(self, base: str) -> str:
        self._count += 1
        return f"_{re.sub(r'[^A-Za-z0-9_]', '_', base).strip('_')}_{self._count}"

    # -- values ---------------------------------------------------------------------------
    def expr(self, v: Any) -> str:
        t = type(v)
        if v is None or t in (bool, int, str, bytes):
            return repr(v)
        if t is float:
            if math.isfinite(v):
                return repr(v)
            return f"struct.unpack('<d', bytes.fromhex('{struct.pack('<d', v).hex()}'))[0]"
        if t is complex:
            return f"complex({self.expr(v.real)}, {self.expr(v.imag)})"
        if t is tuple:
            return "(" + "".join(self.expr(x) + ", " for x in v) + ")"
        if t is list:
            return "[" + ", ".join(self.expr(x) for x in v) + "]"
        if t is dict:
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(x)}" for k, x in v.items()) + "}"
        if t is slice:
            return f"slice({self.expr(v.start)}, {self.expr(v.stop)}, {self.expr(v.step)})"
        if v is Ellipsis:
            return "Ellipsis"
        if isinstance(v, np.dtype):
            return f"np.dtype({v.str!r})"
        known = self.exprs.get(id(v))
        if known is not None:
            return known
        text = self._named(v)
        self.exprs[id(v)] = text
        self.keep.append(v)
        return text

    def _named(self, v: Any) -> str:
        """The expression of an object no literal spells: the first form that fits, tried in
        this order (an object may fit several)."""
        for form in (
            self._numpy_data_expr,
            self._module_expr,
            self._reference_expr,
            self._import_path_expr,
            self._code_expr,
            self._object_expr,
        ):
            text = form(v)
            if text is not None:
                return text
        raise _no_source_form(v)

    def _numpy_data_expr(self, v: Any) -> str | None:
        """A NumPy scalar by its bytes; an array from the ``.npz``."""
        if isinstance(v, np.generic):
            return (
                f"np.frombuffer(bytes.fromhex('{v.tobytes().hex()}'), np.dtype({v.dtype.str!r}))[0]"
            )
        if type(v) is not np.ndarray:
            return None
        if v.dtype.kind not in "biufc":
            raise SaveError(f"export_source: an array of dtype {v.dtype} has no .npz form")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = v
        flag = "False" if not v.flags.writeable else "True"
        return self._define("array", f"_array({key!r}, {flag})")

    def _module_expr(self, v: Any) -> str | None:
        """NumPy, or a standard-library module (imported by the file)."""
        if v is np:
            return "np"
        if not isinstance(v, types.ModuleType):
            return None
        if v.__name__ not in STDLIB:
            raise SaveError(f"export_source: the generated code uses module {v.__name__}")
        self.imports.add(v.__name__)
        return v.__name__

    def _reference_expr(self, v: Any) -> str | None:
        """A variable of the model, a NumPy ufunc or function, or a method of an object that
        has an expression."""
        if isinstance(v, Variable):
            return self._variable(v)
        if isinstance(v, np.ufunc):
            return f"np.{v.__name__}"
        name = numpy_function_name(v) or random_function_name(v)
        if name is not None:
            return "np" + name[len("numpy") :]
        owner = getattr(v, "__self__", None)
        if (
            isinstance(v, (types.MethodType, types.BuiltinMethodType))
            and owner is not None
            and not isinstance(owner, types.ModuleType)
        ):
            return f"{self.expr(owner)}.{v.__name__}"
        return None

    def _import_path_expr(self, v: Any) -> str | None:
        """A builtin, a standard-library function or a NumPy object by the name it is
        imported under."""
        if _is_attribute_of(builtins, v):
            return v.__name__
        module = _module_of(v)
        stdlib = module.lstrip("_")  # (operator.index lives in _operator)
        if stdlib in STDLIB and _is_attribute_of(__import__(stdlib), v):
            self.imports.add(stdlib)
            return f"{stdlib}.{v.__name__}"
        if module.startswith("numpy"):
            return self._numpy_path(v)
        return None

    def _code_expr(self, v: Any) -> str | None:
        """A partial, or a function or class of kernel_ext from its source, or a namedtuple
        class."""
        module = _module_of(v)
        if isinstance(v, functools.partial):
            args = "".join(", " + self.expr(a) for a in v.args)
            kwargs = "".join(f", {k}={self.expr(x)}" for k, x in v.keywords.items())
            self.imports.add("functools")
            return f"functools.partial({self.expr(v.func)}{args}{kwargs})"
        if isinstance(v, types.FunctionType) and module.startswith("kernel_ext"):
            return self._function(v)
        if isinstance(v, type) and module.startswith("kernel_ext"):
            return self._class(v)
        if isinstance(v, type) and issubclass(v, tuple) and hasattr(v, "_fields"):
            return self._namedtuple_class(v)
        return None

    def _namedtuple_class(self, v: Any) -> str:
        """NumPy's own result class by import; any other namedtuple class rebuilt."""
        qualname = v.__qualname__
        qualified = f"{v.__module__}.{qualname}"
        if numpy_result_types().get(qualified) is v:
            self.imports.add("importlib")
            return f"importlib.import_module({v.__module__!r}).{qualname}"
        self.imports.add("collections")
        return self._define(
            v.__name__, f"collections.namedtuple({v.__name__!r}, {list(v._fields)!r})"
        )

    def _object_expr(self, v: Any) -> str | None:
        """A kernel_ext dataclass or plain object by its fields, a builtin type by name, a
        builtin exception by its args."""
        if dataclasses.is_dataclass(v) and type(v).__module__.startswith("kernel_ext"):
            fields = ", ".join(
                f"{f.name}={self.expr(getattr(v, f.name))}" for f in dataclasses.fields(v) if f.init
            )
            return f"{self.expr(type(v))}({fields})"
        if isinstance(v, type) and _is_attribute_of(builtins, v):
            return v.__name__
        if (
            type(v).__module__.startswith("kernel_ext")
            and hasattr(v, "__dict__")
            and not hasattr(type(v), "__slots__")
        ):
            return f"_instance({self.expr(type(v))}, {self.expr(dict(vars(v)))})"
        if isinstance(v, BaseException) and type(v).__module__ == "builtins":
            return f"{type(v).__name__}(*{self.expr(tuple(v.args))})"
        return None

    def _numpy_path(self, v: Any) -> str | None:
        module, name = v.__module__, getattr(v, "__qualname__", None)
        if not name:
            return None
        public = [p for p in module.split(".") if not p.startswith("_")]
        for depth in range(len(public), 0, -1):
            obj: Any = __import__("numpy")
            path = public[1:depth]
            try:
                for part in path + name.split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                continue
            if obj is v:
                return "np" + "".join(f".{p}" for p in path + name.split("."))
        return None

    def _define(self, base: str, text: str) -> str:
        name = self.fresh(base)
        self.lines.append(f"{name} = {text}")
        return name

    def _variable(self, var: Variable) -> str:
        name = self.variables.get(id(var))
        if name is None:
            key = f"v{len(self.variables)}"
            self.arrays[key] = np.asarray(var.peek())
            name = self.fresh(f"variable_{var.name}")
            self.lines.append(f"{name} = Variable(_array({key!r}, True).copy(), {str(var.name)!r})")
            self.variables[id(var)] = name
        return name

    # -- classes and functions ------------------------------------------------------------
    def _class(self, cls: type) -> str:
        """A class of kernel_ext (an exception, a small dataclass) from its own source."""
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
        except (OSError, TypeError, SyntaxError) as e:
            raise SaveError(f"export_source: no source for {cls.__qualname__} ({e})") from None
        assert isinstance(tree, ast.ClassDef)
        name = self.fresh(cls.__name__)
        self.exprs[id(cls)] = name  # (first: its methods may name it)
        self.keep.append(cls)
        module_globals = vars(__import__("sys").modules[cls.__module__])
        refs: set[str] = set()
        for value in vars(cls).values():
            fn = getattr(value, "__func__", value)
            fn = getattr(fn, "fget", fn)
            if isinstance(fn, types.FunctionType):
                refs |= _global_names(fn.__code__) - _local_names(fn.__code__)
        for node in tree.bases + tree.decorator_list:
            refs |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        renames = {}
        for ref in sorted(refs):
            if ref in module_globals:
                renames[ref] = self.expr(module_globals[ref])
        _Renamer(renames).visit(tree)
        tree.name = name
        self.lines.append(ast.unparse(tree))
        self.lines.append(f"{name}.__name__ = {name}.__qualname__ = {cls.__name__!r}")
        return name

    def _function(self, fn: types.FunctionType) -> str:
        tree = _function_ast(fn)
        name = self.fresh(fn.__name__)
        self.exprs[id(fn)] = name  # (first: a function may call itself)
        self.keep.append(fn)
        code = fn.__code__
        local_names = _local_names(code)
        # globals the function reads: bound at module level under a unique name each
        renames: dict[str, str] = {}
        for ref in sorted(_global_names(code)):
            if ref in local_names:
                continue
            if ref in fn.__globals__:
                renames[ref] = self.expr(fn.__globals__[ref])
            elif not hasattr(builtins, ref):
                raise SaveError(
                    f"export_source: {fn.__qualname__} reads {ref!r}, which is "
                    "neither its module's nor a builtin"
                )
        _Renamer(renames).visit(tree)
        defaults = fn.__defaults__ or ()
        tree.args.defaults = [ast.Constant(None) for _ in tree.args.defaults]
        tree.args.kw_defaults = [
            None if d is None else ast.Constant(None) for d in tree.args.kw_defaults
        ]
        if isinstance(tree, ast.Lambda):
            body = f"_function = {ast.unparse(tree)}\n"
        else:
            tree.name = "_function"
            tree.decorator_list = []
            tree.returns = None
            for a in tree.args.args + tree.args.kwonlyargs + tree.args.posonlyargs:
                a.annotation = None
            if tree.args.vararg is not None:
                tree.args.vararg.annotation = None
            if tree.args.kwarg is not None:
                tree.args.kwarg.annotation = None
            body = ast.unparse(tree) + "\n"
        if defaults:
            body += f"_function.__defaults__ = {self.expr(tuple(defaults))}\n"
        if fn.__kwdefaults__:
            body += f"_function.__kwdefaults__ = {self.expr(dict(fn.__kwdefaults__))}\n"
        body += "return _function"
        free = code.co_freevars
        cells = [self.expr(c.cell_contents) for c in (fn.__closure__ or ())]
        self.lines.append(f"def _make{name}({', '.join(free)}):")
        self.lines.append(textwrap.indent(body, "    "))
        self.lines.append(f"{name} = _make{name}({', '.join(cells)})")
        return name


def _is_attribute_of(owner: object, v: Any) -> bool:
    """Whether ``v`` is the attribute of ``owner`` that bears ``v``'s own ``__name__``."""
    return getattr(owner, getattr(v, "__name__", ""), None) is v


def _module_of(v: Any) -> str:
    """The name of the module that defines ``v`` (empty when it names none)."""
    return getattr(v, "__module__", None) or ""


def _no_source_form(v: Any) -> SaveError:
    """The refusal of an object the exported file cannot spell."""
    if isinstance(v, np.random.Generator) or type(v).__module__.startswith(
        "kernel_ext.trace.random"
    ):
        return SaveError(
            "export_source: the graph draws from a np.random.Generator held by "
            "reference, whose state a file cannot hold. Fix: draw the random "
            "values outside the kx.function and pass them in."
        )
    return SaveError(
        f"export_source: the generated code uses {type(v).__qualname__} "
        f"{v!r:.60}, which has no source form. Fix: kx.saved_model.save keeps "
        "this graph as data instead."
    )


class _Renamer(ast.NodeTransformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def visit_Name(self, node: ast.Name) -> Any:
        new = self.renames.get(node.id)
        if new is not None and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.parse(new, mode="eval").body, node)
        return node


def _local_names(code: types.CodeType) -> set[str]:
    names = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _local_names(const)
    return names


def _global_names(code: types.CodeType) -> set[str]:
    """Names a code object (and its nested ones) may read as globals."""
    names = set()
    for ins in __import__("dis").get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _function_ast(fn: types.FunctionType) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda:
    """The ``def`` or ``lambda`` of ``fn`` as an AST, from its source."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise SaveError(f"export_source: no source for {fn.__qualname__} ({e})") from None
    text = textwrap.dedent("".join(lines))
    if fn.__name__ != "<lambda>":
        module = ast.parse(text)
        definition = module.body[0]
        if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise SaveError(f"export_source: cannot read the def of {fn.__qualname__}")
        return definition
    # a lambda: among those of its file starting on its first line, the one that compiles to
    # its own bytecode (several may share a line: ``{"int": lambda v: int(v), ...}``)
    module = _file_ast(fn.__code__.co_filename)
    code = fn.__code__
    found: list[ast.Lambda] = []
    for candidate in ast.walk(module):
        if isinstance(candidate, ast.Lambda) and candidate.lineno == code.co_firstlineno:
            node = candidate
            compiled = compile(ast.fix_missing_locations(ast.Expression(node)), "<lambda>", "eval")
            inner = [c for c in compiled.co_consts if isinstance(c, types.CodeType)]
            # (compiled alone, its free variables read as globals)
            if (
                inner
                and inner[0].co_varnames == code.co_varnames
                and set(inner[0].co_names) == set(code.co_names) | set(code.co_freevars)
                and inner[0].co_consts == code.co_consts
            ):
                found.append(node)
    if len({ast.unparse(n) for n in found}) != 1:
        raise SaveError(
            f"export_source: cannot pick out the lambda of {fn.__qualname__} "
            f"at {code.co_filename}:{first}"
        )
    return found[0]


@functools.lru_cache(maxsize=64)
def _file_ast(filename: str) -> ast.Module:
    with open(filename, encoding="utf-8") as f:
        return ast.parse(f.read())


def _spec_source(t: Any) -> str:
    if type(t) is TensorSpec:
        return repr(("tensor", t.shape, np.dtype(t.dtype).str))
    if type(t) is Literal:
        return f"('literal', {t.value!r})"
    if type(t) is Sequence_:
        kind = "tuple" if t.container is tuple else "list"
        return f"('{kind}', (" + "".join(_spec_source(c) + ", " for c in t.components) + "))"
    if type(t) is Dict:
        return (
            "('dict', {"
            + ", ".join(f"{k!r}: {_spec_source(c)}" for k, c in zip(t.keys, t.components))
            + "})"
        )
    raise SaveError(f"export_source: an argument of type {t!r} has no source form")


def export_source(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` (as :func:`~kernel_ext.saved_model.save` takes it) as one ``.py`` file
    at ``path`` that needs only NumPy, plus ``<name>.npz`` beside it when the graphs hold
    arrays. Raises :class:`~kernel_ext.saved_model.SaveError` for what has no source form."""
    path = os.fspath(path)
    if not path.endswith(".py"):
        raise ValueError(f"export_source(): path {path!r} should name a .py file")
    functions = functions_of(obj, None)
    exporter = Exporter()
    blocks: list[str] = []
    for fname, traces in functions.items():
        if fname in _RESERVED or fname.startswith("_"):
            raise SaveError(
                f"export_source: a function named {fname!r} would hide a name the "
                "exported file needs. Fix: give it another name (kx.function(..., "
                "name=...), or another attribute name)."
            )
        entries = []
        for i, trace in enumerate(traces):
            entries.append(_trace_block(exporter, fname, i, trace, blocks))
        blocks.append(f"_{fname}_signatures = [{', '.join(entries)}]\n\n")
        blocks.append(
            f"def {fname}(*args, **kwargs):\n"
            f'    """The saved function {fname}: {len(traces)} signature(s)."""\n'
            f"    return _dispatch({fname!r}, _{fname}_signatures, args, kwargs)\n\n"
        )
    for var in variables_held(obj).values():
        exporter.expr(var)
    stem = os.path.splitext(os.path.basename(path))[0]
    header = [
        f'"""{", ".join(functions)}: exported by kernel_ext.saved_model.export_source.',
        "",
        "Needs NumPy only. Generated code: edit the model, not this file.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    header += [f"import {m}" for m in sorted(exporter.imports | {"inspect", "os", "struct"})]
    header += ["", ""]
    if exporter.arrays:
        header += [
            f"_ARRAYS = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "
            f"{stem + '.npz'!r}), allow_pickle=False)",
            "",
            "",
            "def _array(key, writeable):",
            "    value = _ARRAYS[key]",
            "    value.setflags(write=writeable)",
            "    return value",
            "",
            "",
        ]
    header.append(_VARIABLE_CLASS)
    header.append(_SIGNATURE_HELPERS)
    variables = ", ".join(
        f"{exporter.expr(v)}.name: {exporter.expr(v)}" for v in variables_held(obj).values()
    )
    body = "\n".join(header) + "\n" + "\n".join(exporter.lines) + "\n\n\n" + "".join(blocks)
    body += f"variables = {{{variables}}}\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(body)
    if exporter.arrays:
        np.savez(
            os.path.join(os.path.dirname(os.path.abspath(path)), stem + ".npz"),
            allow_pickle=False,
            **exporter.arrays,
        )


def _trace_block(exporter: Exporter, fname: str, i: int, trace: Trace, blocks: list[str]) -> str:
    source, namespace = generate_source(trace.graph, trace.tree, len(trace.kinds))
    binds = []
    for key, value in namespace.items():
        if key in ("np", "run"):
            continue
        binds.append(f"    {key} = {exporter.expr(value)}")
    factory = f"_build_{fname}_{i}"
    blocks.append(
        f"def {factory}():\n"
        + "\n".join(binds)
        + "\n"
        + textwrap.indent(source, "    ")
        + "    return run\n\n\n"
    )
    params = ", ".join(
        f"inspect.Parameter({n!r}, inspect.Parameter.{k.name})" for n, k in trace.kinds
    )
    specs = "(" + "".join(_spec_source(t) + ", " for t in trace.input_types) + ")"
    guard = "None" if trace.guard is None else exporter.expr(trace.guard.violated)
    return f"(inspect.Signature([{params}]), {specs}, {factory}(), {guard})"


__all__ = ["export_source"]
