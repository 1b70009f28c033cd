"""Graphs and attr values to JSON and back: every value type tagged, every field checked.

Encoding (``Encoder``) turns a :class:`~kernel_ext.ir.Graph` into plain JSON: a node is
``{"name", "op", "args", "attrs", "aval", "source"}``; an input node in ``args`` is
``{"$": "node", "name": ...}``; sub-graphs (cond branches, while cond/body) are encoded in
place. Each attr value is JSON's own ``null``/``true``/``false``/int/string/list (a Python
list), or an object ``{"$": tag, ...}`` naming its type: ``float`` and ``complex`` (by their
bits, so ``-0.0`` and NaN payloads survive), ``tuple``, ``dict``, ``slice``, ``ellipsis``,
``dtype``, ``scalar`` (a NumPy scalar, by its bytes), ``array`` (a ``.npy`` file),
``aval``, ``dynamic_index``, ``operand``, ``call_template``, ``ufunc``, ``numpy_function``,
``random_function``, ``error`` (a builtin exception of a run-time check), ``pytype`` (a Python
number type), ``variable`` (an index into the manifest's variables) and ``graph``. A value of
any other type is refused at save time (:class:`~.format.SaveError`).

Decoding (``Decoder``) accepts exactly these forms. Names of NumPy functions resolve only
against :func:`numpy_callables`, an allow-list built from NumPy's public namespaces: nothing
named by a file is imported. Any other shape of data raises
:class:`~.format.SavedModelFormatError` naming the file and where in it.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ..ir import (
    AbstractValue,
    CallTemplate,
    DynamicIndex,
    Graph,
    GraphLintError,
    Node,
    Operand,
    OpKind,
    abstract_eval,
    lint,
)
from ..ir.params import MISSING, AnyParams, make_params
from ..trace import MUTATING_FUNCTIONS, Variable
from ..trace.source_lines import SourceLine
from ..trace.zero_d import node_form, restore_node_form
from .format import IDENTIFIER, MAX_DEPTH, SavedModelFormatError, SaveError

#: dtypes a saved value may have: bool and the numeric kinds (never object, string, void).
DTYPE_KINDS = frozenset("biufc")

#: Exceptions a run-time check (``if bad: raise ValueError(...)``) may raise after loading.
ERROR_TYPES: dict[str, type[BaseException]] = {
    t.__name__: t
    for t in (
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        ArithmeticError,
        OverflowError,
        ZeroDivisionError,
        FloatingPointError,
        AssertionError,
        RuntimeError,
        LookupError,
        NotImplementedError,
        np.linalg.LinAlgError,
    )
}

#: Python types an output leaf may be returned as (``float(x)``), and a fresh 0-d array.
PY_TYPES: dict[str, type] = {
    "bool": bool,
    "int": int,
    "float": float,
    "complex": complex,
    "ndarray": np.ndarray,
}

_UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer")  # (at writes in place)
_GLOBAL_RANDOM_STATE = np.random.mtrand._rand


#: NumPy functions a saved model may never name, though NumPy dispatches them on arrays:
#: files in and out, global settings, and functions that write into their arguments.
DENIED = frozenset(
    {
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "load",
        "loadtxt",
        "genfromtxt",
        "fromfile",
        "fromregex",
        "frompyfunc",
        "copyto",
        "fill_diagonal",
        "put",
        "place",
        "putmask",
        "put_along_axis",
        "set_printoptions",
        "seterr",
        "seterrcall",
        "setbufsize",
        "test",
        "info",
        "show_config",
        "show_runtime",
        "get_include",
        "lookfor",
        "source",
        "who",
        "seed",
        "set_state",
    }
)
#: The kinds of NumPy callable an opaque call can be: array-function dispatchers (what
#: ``__array_function__`` sees), ufuncs and C functions. NumPy's plain Python functions are
#: never dispatched to a traced value, so none is needed (np.load is one).
#: The notes of a node's meta a loaded file may hold (``_where`` among its attrs), by type:
#: where it was made, made by a gradient, a short sum's term. A loop's ``stacked`` state has
#: no data form: saving a graph with one is refused (``SaveError``, naming the loop).
_NOTES: dict[str, type] = {"where": str, "backward": bool, "sum_term": bool}
_DISPATCHED = ("_ArrayFunctionDispatcher", "ufunc", "builtin_function_or_method")


@functools.lru_cache(maxsize=1)
def numpy_callables() -> dict[str, Callable[..., Any]]:
    """The allow-list of NumPy callables a saved opaque call may name: the dispatched
    functions and ufuncs of ``numpy``, ``numpy.linalg`` and ``numpy.fft``
    (``"numpy.linalg.norm"``) and the pure methods of NumPy's ufuncs (``"numpy.add.reduce"``),
    less :data:`DENIED`."""
    out: dict[str, Callable[..., Any]] = {}
    mutating = set(MUTATING_FUNCTIONS)
    for prefix, module in (("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft)):
        for name in dir(module):
            if name.startswith("_") or name in DENIED:
                continue
            obj = getattr(module, name, None)
            if obj is None or type(obj).__name__ not in _DISPATCHED or obj in mutating:
                continue
            out[f"{prefix}.{name}"] = obj
            if isinstance(obj, np.ufunc) and prefix == "numpy":
                for method in _UFUNC_METHODS:
                    out[f"numpy.{name}.{method}"] = getattr(obj, method)
    return out


@functools.lru_cache(maxsize=1)
def random_callables() -> dict[str, Callable[..., Any]]:
    """The allow-list of ``np.random`` draws a saved random call may name (the functions of
    the global random state: ``"numpy.random.rand"``; not ``seed`` or ``set_state``)."""
    out: dict[str, Any] = {}
    for name in dir(np.random):
        obj = getattr(np.random, name, None)
        if (
            getattr(obj, "__self__", None) is _GLOBAL_RANDOM_STATE
            and not name.startswith("_")
            and name not in DENIED
        ):
            out[f"numpy.random.{name}"] = obj
    return out


@functools.lru_cache(maxsize=1)
def numpy_result_types() -> dict[str, type]:
    """NumPy's own namedtuple result classes (``EighResult``, ``UniqueCountsResult``, ...),
    by ``module.qualname``: a result of one comes back as that class, not a look-alike."""
    import importlib

    out: dict[str, type] = {}
    for module_name in ("numpy.linalg._linalg", "numpy.lib._arraysetops_impl"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # (another NumPy layout: such results come back as namedtuples)
            continue
        for name, obj in vars(module).items():
            if (
                isinstance(obj, type)
                and issubclass(obj, tuple)
                and hasattr(obj, "_fields")
                and name.endswith("Result")
            ):
                out[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return out


@functools.lru_cache(maxsize=1)
def _numpy_names() -> dict[int, str]:
    names: dict[int, str] = {}
    for name, obj in numpy_callables().items():
        if not isinstance(getattr(obj, "__self__", None), np.ufunc):
            names.setdefault(id(obj), name)
    return names


def numpy_function_name(fn: Any) -> str | None:
    """The allow-list name of a NumPy callable, or None (a user's function, a lambda...)."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        name = f"numpy.{owner.__name__}.{getattr(fn, '__name__', '')}"
        return name if numpy_callables().get(name) == fn else None
    return _numpy_names().get(id(fn))


def random_function_name(fn: Any) -> str | None:
    """The allow-list name of a draw from NumPy's global random state, or None."""
    if getattr(fn, "__self__", None) is not _GLOBAL_RANDOM_STATE:
        return None
    name = f"numpy.random.{getattr(fn, '__name__', '')}"
    return name if name in random_callables() else None


def _float_bits(value: float) -> str:
    return struct.pack("<d", value).hex()


def where_text(node: Node) -> str:
    """``%name (op) at file:line: `text```: a node as refusal messages name it."""
    src = node.source
    at = (
        f" at {src.file}:{src.line}: `{src.text}`"
        if isinstance(src, SourceLine)
        else " (line unknown)"
    )
    return f"node %{node.name} ({node.op.value}){at}"


def _is_path_step(kind: Any, key: Any) -> bool:
    """One step after the argument of a placeholder's path: an int item, any key, or a
    public attribute name."""
    return (
        (kind == "item" and type(key) is int)
        or kind == "key"
        or (
            kind == "attr"
            and isinstance(key, str)
            and key.isidentifier()
            and not key.startswith("_")
        )
    )


def _is_argument_path(path: Any) -> bool:
    """Whether ``path`` is a top-level placeholder's path: ``(('arg', i), ...)`` then
    item/key/attr steps, each a pair."""
    return (
        isinstance(path, tuple)
        and bool(path)
        and all(isinstance(s, tuple) and len(s) == 2 for s in path)
        and path[0][0] == "arg"
        and type(path[0][1]) is int
        and all(_is_path_step(k, v) for k, v in path[1:])
    )


class Encoder:
    """Encodes graphs; ``arrays`` collects the ``.npy`` payloads, ``variables`` the
    ``kx.Variable`` objects (their index is their position)."""

    def __init__(
        self, add_array: Callable[[np.ndarray], str], variable_index: Callable[[Any], int]
    ) -> None:
        self.add_array = add_array
        self.variable_index = variable_index
        self._node: Node | None = None

    # -- graphs ---------------------------------------------------------------------------
    def graph(self, graph: Graph) -> dict:
        return {
            "name": graph.name,
            "nodes": [self.node(n) for n in graph.nodes],
            "outputs": [o.name for o in graph.outputs],
        }

    def node(self, node: Node) -> dict:
        outer, self._node = self._node, node
        try:
            self._refuse_opaque(node)
            args = [
                {"$": "node", "name": a.name} if isinstance(a, Node) else self.value(a)
                for a in node.args
            ]
            if "stacked" in node.meta:
                raise self._refuse(
                    "it is a graph loop a gradient rewrote to keep every iteration's state, "
                    "and a saved model has no form for that state yet",
                    "Fix: save the function the gradient is taken of (its loops save), and "
                    "compute the gradient outside the saved function.",
                )
            attrs = {}
            # (the meta is saved among the attrs, each name after an underscore: the format
            # of the files saved before nodes had a meta)
            notes = {f"_{key}": value for key, value in node.meta.items()}
            for key, value in [*node.params.items(), *notes.items()]:
                if not IDENTIFIER.match(key):
                    raise self._refuse(f"its attr name {key!r} is not an identifier")
                attrs[key] = self.value(value)
            src = node.source
            source = (
                {"file": str(src.file), "line": int(src.line), "text": str(src.text)}
                if isinstance(src, SourceLine)
                else None
            )
            return {
                "name": node.name,
                "op": node.op.value,
                "args": args,
                "attrs": attrs,
                "aval": self.value(node.aval),
                "source": source,
                "form": node_form(node),
            }
        finally:
            self._node = outer

    def _refuse(self, what: str, fix: str = "") -> SaveError:
        node = self._node
        where = where_text(node) if node is not None else "the graph"
        return SaveError(
            f"cannot save {where}: {what}. "
            + (
                fix
                or "Fix: compute this outside the kx.function and pass the result in as an "
                "argument."
            )
        )

    def _refuse_opaque(self, node: Node) -> None:
        if node.op is OpKind.NUMPY_CALL:
            fn = node.params.fn
            if numpy_function_name(fn) is None:
                name = getattr(fn, "__qualname__", None) or type(fn).__name__
                raise self._refuse(
                    f"it calls the Python function {name!r} as it is (an opaque call); a saved "
                    "model holds data only, never Python code",
                    "Fix: write the function with NumPy operations kx.function traces, or call "
                    "it outside the kx.function and pass its result in as an argument.",
                )
        elif node.op is OpKind.RANDOM_CALL and random_function_name(node.params.fn) is None:
            raise self._refuse(
                "it draws from a np.random.Generator (or shuffles) held by reference; a "
                "saved model cannot hold the generator's state",
                "Fix: draw the random values outside the kx.function and pass them in, or "
                "use np.random's global functions (np.random.rand, np.random.normal, ...).",
            )

    # -- values ---------------------------------------------------------------------------
    def value(self, v: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise self._refuse("a value nested too deeply")
        encode = self._BY_EXACT_TYPE.get(type(v))
        if encode is not None:
            return encode(self, v, depth + 1)
        return self._value_by_kind(v, depth + 1)

    def _as_is(self, v: Any, d: int) -> Any:
        return v

    def _float(self, v: float, d: int) -> dict:
        return {"$": "float", "bits": _float_bits(v)}

    def _complex(self, v: complex, d: int) -> dict:
        return {"$": "complex", "bits": _float_bits(v.real) + _float_bits(v.imag)}

    def _list(self, v: list, d: int) -> list:
        return [self.value(x, d) for x in v]

    def _tuple(self, v: tuple, d: int) -> dict:
        return {"$": "tuple", "items": [self.value(x, d) for x in v]}

    def _dict(self, v: dict, d: int) -> dict:
        return {
            "$": "dict",
            "items": [[self.value(k, d), self.value(x, d)] for k, x in v.items()],
        }

    def _slice(self, v: slice, d: int) -> dict:
        return {
            "$": "slice",
            "start": self.value(v.start, d),
            "stop": self.value(v.stop, d),
            "step": self.value(v.step, d),
        }

    def _ellipsis(self, v: Any, d: int) -> dict:
        return {"$": "ellipsis"}

    def _array(self, v: np.ndarray, d: int) -> dict:
        self._dtype(v.dtype)
        return {"$": "array", "file": self.add_array(v)}

    def _aval(self, v: AbstractValue, d: int) -> dict:
        return {"$": "aval", "shape": self.value(v.shape, d), "dtype": self._dtype(v.dtype)}

    def _dynamic_index(self, v: DynamicIndex, d: int) -> dict:
        return {"$": "dynamic_index", "position": v.position}

    def _operand(self, v: Operand, d: int) -> dict:
        return {"$": "operand", "index": v.index}

    def _call_template(self, v: CallTemplate, d: int) -> dict:
        return {
            "$": "call_template",
            "args": self.value(v.args, d),
            "kwargs": self.value(v.kwargs, d),
        }

    #: Encoders of the types matched exactly (a subclass, e.g. np.float64 of float, is not
    #: one of them: it falls through to :meth:`_value_by_kind`).
    _BY_EXACT_TYPE: ClassVar[dict[type, Callable[[Encoder, Any, int], Any]]] = {
        type(None): _as_is,
        bool: _as_is,
        str: _as_is,
        int: _as_is,
        float: _float,
        complex: _complex,
        list: _list,
        tuple: _tuple,
        dict: _dict,
        slice: _slice,
        type(Ellipsis): _ellipsis,
        np.ndarray: _array,
        AbstractValue: _aval,
        DynamicIndex: _dynamic_index,
        Operand: _operand,
        CallTemplate: _call_template,
    }

    def _value_by_kind(self, v: Any, d: int) -> Any:
        """A value of no exactly matched type, by what it is an instance of."""
        t = type(v)
        if isinstance(v, np.dtype):
            return {"$": "dtype", "str": self._dtype(v)}
        if isinstance(v, np.generic):
            return {"$": "scalar", "dtype": self._dtype(v.dtype), "bytes": v.tobytes().hex()}
        if isinstance(v, np.ufunc):
            return {"$": "ufunc", "name": v.__name__}
        if isinstance(v, Graph):
            return {"$": "graph", "graph": self.graph(v)}
        if isinstance(v, type) and v in PY_TYPES.values():
            return {"$": "pytype", "name": v.__name__}
        if isinstance(v, BaseException) and ERROR_TYPES.get(t.__name__) is t:
            return {"$": "error", "type": t.__name__, "args": self.value(tuple(v.args), d)}
        if callable(v):
            named = self._named_function(v)
            if named is not None:
                return named
        if isinstance(v, Variable):
            return {"$": "variable", "index": self.variable_index(v)}
        raise self._refuse(
            f"it holds a {t.__module__}.{t.__qualname__} ({_short(v)}), which has no data form"
        )

    def _named_function(self, v: Any) -> dict | None:
        """A NumPy function or global random draw by its allow-list name; None for a type or
        a Generator (refused later unless data); a refusal for any other Python callable."""
        name = numpy_function_name(v)
        if name is not None:
            return {"$": "numpy_function", "name": name}
        name = random_function_name(v)
        if name is not None:
            return {"$": "random_function", "name": name}
        if isinstance(v, (type, np.random.Generator)):
            return None
        label = getattr(v, "__qualname__", None) or type(v).__qualname__
        raise self._refuse(
            f"it runs the Python callable {label!r} (passed to a NumPy function, or "
            "called as it is); a saved model holds data only, never Python code",
            "Fix: use one of NumPy's own options (e.g. np.pad's mode='constant' with "
            "constant_values=...), or compute this outside the kx.function and pass "
            "the result in as an argument.",
        )

    def _dtype(self, dtype: np.dtype) -> str:
        dtype = np.dtype(dtype)
        if dtype.kind not in DTYPE_KINDS:
            raise self._refuse(
                f"it holds a value of dtype {dtype}; a saved model holds bool "
                "and numeric arrays only"
            )
        return dtype.str


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


class Decoder:
    """Decodes what :class:`Encoder` wrote, refusing anything else. ``load_array(file)``
    reads one ``.npy`` of the model; ``variables`` are the loaded ``kx.Variable`` objects."""

    def __init__(
        self, where: str, load_array: Callable[[str], np.ndarray], variables: list[Any]
    ) -> None:
        self.where = where
        self.load_array = load_array
        self.variables = variables

    def fail(self, what: str) -> SavedModelFormatError:
        return SavedModelFormatError(f"{self.where}: {what}")

    def expect(self, obj: Any, kind: type | tuple, what: str) -> Any:
        if not isinstance(obj, kind) or (kind is int and isinstance(obj, bool)):
            raise self.fail(
                f"{what} should be {getattr(kind, '__name__', kind)}, got {type(obj).__name__}"
            )
        return obj

    def fields(self, obj: Any, what: str, required: tuple[str, ...]) -> dict:
        self.expect(obj, dict, what)
        missing = [k for k in required if k not in obj]
        extra = [k for k in obj if k not in required]
        if missing or extra:
            raise self.fail(f"{what} has fields {sorted(obj)}, expected {sorted(required)}")
        return obj

    # -- graphs ---------------------------------------------------------------------------
    def graph(self, obj: Any, depth: int = 0) -> Graph:
        if depth > MAX_DEPTH:
            raise self.fail("sub-graphs nested too deeply")
        obj = self.fields(obj, "a graph", ("name", "nodes", "outputs"))
        g = Graph(self.expect(obj["name"], str, "a graph's name"))
        by_name: dict[str, Node] = {}
        for i, raw in enumerate(self.expect(obj["nodes"], list, "a graph's nodes")):
            node = self.node(raw, by_name, depth, f"node #{i} of graph {g.name!r}")
            g.nodes.append(node)
            g.unique_name(node.name)
            by_name[node.name] = node
            if node.op is OpKind.PLACEHOLDER:
                g.inputs.append(node)
        outputs = []
        for name in self.expect(obj["outputs"], list, "a graph's outputs"):
            if not isinstance(name, str) or name not in by_name:
                raise self.fail(f"graph {g.name!r} returns {name!r}, which is none of its nodes")
            outputs.append(by_name[name])
        g.outputs = outputs
        try:
            lint(g)
        except GraphLintError as e:
            raise self.fail(f"graph {g.name!r} is not well formed: {e}") from None
        return g

    def node(self, raw: Any, by_name: dict[str, Node], depth: int, what: str) -> Node:
        raw = self.fields(raw, what, ("name", "op", "args", "attrs", "aval", "source", "form"))
        if raw["form"] not in (None, "array", "scalar", "asarray"):
            raise self.fail(f"{what}: form {raw['form']!r} is none of array, scalar, asarray")
        name = self.expect(raw["name"], str, f"{what}: name")
        if name in by_name:
            raise self.fail(f"{what}: a second node named {name!r}")
        try:
            op = OpKind(self.expect(raw["op"], str, f"{what}: op"))  # type: ignore[call-arg]
        except ValueError:
            raise self.fail(f"{what}: unknown op {raw['op']!r}") from None
        args = []
        for a in self.expect(raw["args"], list, f"{what}: args"):
            if isinstance(a, dict) and a.get("$") == "node":
                ref = self.fields(a, f"{what}: an input", ("$", "name"))["name"]
                if not isinstance(ref, str) or ref not in by_name:
                    raise self.fail(f"{what}: input {ref!r} is not an earlier node")
                args.append(by_name[ref])
            else:
                args.append(self.value(a, depth, f"{what}: an argument"))
        attrs, meta = {}, {}
        for key, value in self.expect(raw["attrs"], dict, f"{what}: attrs").items():
            if not IDENTIFIER.match(key):
                raise self.fail(f"{what}: attr name {key!r} is not an identifier")
            decoded = self.value(value, depth, f"{what}: attr {key!r}")
            if key.startswith("_"):  # a note of the node's meta (saving writes them so)
                note = _NOTES.get(key[1:])
                if note is None or type(decoded) is not note:
                    kept = ", ".join(f"_{k} ({t.__name__})" for k, t in _NOTES.items())
                    raise self.fail(
                        f"{what}: {key!r} ({type(decoded).__name__}) is not a note a node "
                        f"keeps; a node's underscore attrs are {kept}. The file was not "
                        "written by kx.saved_model.save, or was altered: save the model again"
                    )
                meta[key[1:]] = decoded
            else:
                attrs[key] = decoded
        try:
            params = make_params(op, attrs)
        except TypeError as e:
            raise self.fail(f"{what}: {e}") from None
        self._check_params(op, params, what, depth)
        aval = self.value(raw["aval"], depth, f"{what}: aval")
        if not (
            aval is None
            or isinstance(aval, AbstractValue)
            or (isinstance(aval, tuple) and all(isinstance(a, AbstractValue) for a in aval))
        ):
            raise self.fail(f"{what}: aval is neither an abstract value nor a tuple of them")
        src = raw["source"]
        source = None
        if src is not None:
            src = self.fields(src, f"{what}: source", ("file", "line", "text"))
            source = SourceLine(
                self.expect(src["file"], str, f"{what}: source file"),
                self.expect(src["line"], int, f"{what}: source line"),
                self.expect(src["text"], str, f"{what}: source text"),
            )
        if op is not OpKind.PLACEHOLDER:
            # the op's own shape rule on the inputs and attrs must give the recorded value:
            # an altered argument list, attr or aval is caught here, before any executor
            # builds code from the node
            try:
                inferred = abstract_eval(
                    op, params, [a.aval if isinstance(a, Node) else a for a in args]
                )
            except Exception as e:  # noqa: BLE001 - any rule's complaint is a format error
                raise self.fail(
                    f"{what}: the {op.value} op rejects its inputs and attrs "
                    f"({type(e).__name__}: {str(e)[:200]})"
                ) from None
            if inferred != aval:
                raise self.fail(f"{what}: records {aval} but its inputs and attrs give {inferred}")
        node = Node(name, op, tuple(args), params, aval, source, meta)
        restore_node_form(node, raw["form"])
        return node

    def _check_params(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        """The parameters the executors write into generated code as text, or call, have the
        type they expect."""
        check = self._PARAM_CHECKS.get(op)
        if check is not None:
            check(self, op, params, what, depth)

    def _check_int_field(self, op: OpKind, value: Any, key: str, what: str) -> None:
        if type(value) is not int:
            raise self.fail(f"{what}: attr {key!r} of {op.value} must be an int")

    def _check_get_output(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        self._check_int_field(op, params.index if "index" in params else None, "index", what)

    def _check_placeholder(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        if depth:
            if "path" in params:
                raise self.fail(f"{what}: a sub-graph's placeholder reads no argument path")
            return
        if not _is_argument_path(params.path):
            raise self.fail(
                f"{what}: a placeholder's path must be (('arg', i), ...) of item/key/attr steps"
            )

    def _check_cond(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        branches = params.branches
        if not (
            isinstance(branches, tuple)
            and len(branches) == 2
            and all(isinstance(b, Graph) for b in branches)
        ):
            raise self.fail(f"{what}: a cond needs two branch graphs")

    def _check_while(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        self._check_int_field(op, params.n_vars, "n_vars", what)
        if not (isinstance(params.cond, Graph) and isinstance(params.body, Graph)):
            raise self.fail(f"{what}: a while needs cond and body graphs")

    def _check_opaque_call(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        if not callable(params.fn) or not isinstance(params.template, CallTemplate):
            raise self.fail(f"{what}: an opaque call needs a NumPy function and a template")

    def _check_variable_op(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        if params.variable is MISSING:
            raise self.fail(f"{what}: a variable op without its variable")

    def _check_check(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        if not isinstance(params.error, BaseException):
            raise self.fail(f"{what}: a check without its error")

    def _check_constant(self, op: OpKind, params: AnyParams, what: str, depth: int) -> None:
        if not isinstance(params.value, np.ndarray):
            raise self.fail(f"{what}: a constant without an array value")

    #: The parameter check of each op that has one (an op checks nothing else).
    _PARAM_CHECKS: ClassVar[
        dict[OpKind, Callable[[Decoder, OpKind, AnyParams, str, int], None]]
    ] = {
        OpKind.GET_OUTPUT: _check_get_output,
        OpKind.PLACEHOLDER: _check_placeholder,
        OpKind.COND: _check_cond,
        OpKind.WHILE: _check_while,
        OpKind.NUMPY_CALL: _check_opaque_call,
        OpKind.RANDOM_CALL: _check_opaque_call,
        OpKind.READ_VARIABLE: _check_variable_op,
        OpKind.ASSIGN_VARIABLE: _check_variable_op,
        OpKind.ASSIGN_ADD_VARIABLE: _check_variable_op,
        OpKind.ASSIGN_SUB_VARIABLE: _check_variable_op,
        OpKind.CHECK: _check_check,
        OpKind.CONSTANT: _check_constant,
    }

    # -- values ---------------------------------------------------------------------------
    def value(self, v: Any, depth: int, what: str) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"{what}: nested too deeply")
        d = depth + 1
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, list):
            return [self.value(x, d, what) for x in v]
        if not isinstance(v, dict) or not isinstance(v.get("$"), str):
            raise self.fail(f"{what}: {type(v).__name__} is no encoded value")
        tag = v["$"]
        handler = getattr(self, f"_tag_{tag}", None) if IDENTIFIER.match(tag) else None
        if handler is None:
            raise self.fail(f"{what}: unknown value tag {tag!r}")
        return handler(v, d, what)

    def _bits(self, text: Any, n: int, what: str) -> bytes:
        if not isinstance(text, str) or len(text) != 16 * n:
            raise self.fail(f"{what}: bits must be {16 * n} hex digits")
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise self.fail(f"{what}: bits are not hex") from None

    def _tag_float(self, v: dict, d: int, what: str) -> float:
        v = self.fields(v, what, ("$", "bits"))
        return struct.unpack("<d", self._bits(v["bits"], 1, what))[0]

    def _tag_complex(self, v: dict, d: int, what: str) -> complex:
        v = self.fields(v, what, ("$", "bits"))
        return complex(*struct.unpack("<dd", self._bits(v["bits"], 2, what)))

    def _tag_tuple(self, v: dict, d: int, what: str) -> tuple:
        v = self.fields(v, what, ("$", "items"))
        return tuple(self.value(x, d, what) for x in self.expect(v["items"], list, what))

    def _tag_dict(self, v: dict, d: int, what: str) -> dict:
        v = self.fields(v, what, ("$", "items"))
        out = {}
        for pair in self.expect(v["items"], list, what):
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.fail(f"{what}: a dict item must be a [key, value] pair")
            key = self.value(pair[0], d, what)
            try:
                hash(key)
            except TypeError:
                raise self.fail(f"{what}: a dict key is unhashable") from None
            out[key] = self.value(pair[1], d, what)
        return out

    def _tag_slice(self, v: dict, d: int, what: str) -> slice:
        v = self.fields(v, what, ("$", "start", "stop", "step"))
        parts = [self.value(v[k], d, what) for k in ("start", "stop", "step")]
        for p in parts:
            if not (p is None or type(p) is int or isinstance(p, DynamicIndex)):
                raise self.fail(f"{what}: a slice bound must be an int or None")
        return slice(*parts)

    def _tag_ellipsis(self, v: dict, d: int, what: str) -> Any:
        self.fields(v, what, ("$",))
        return Ellipsis

    def dtype(self, text: Any, what: str) -> np.dtype:
        if not isinstance(text, str) or len(text) > 8:
            raise self.fail(f"{what}: dtype must be a short dtype string")
        try:
            dtype = np.dtype(text)
        except TypeError:
            raise self.fail(f"{what}: {text!r} is not a dtype") from None
        if dtype.kind not in DTYPE_KINDS or dtype.str != text:
            raise self.fail(f"{what}: dtype {text!r} is not a bool or numeric dtype")
        return dtype

    def _tag_dtype(self, v: dict, d: int, what: str) -> np.dtype:
        return self.dtype(self.fields(v, what, ("$", "str"))["str"], what)

    def _tag_scalar(self, v: dict, d: int, what: str) -> np.generic:
        v = self.fields(v, what, ("$", "dtype", "bytes"))
        dtype = self.dtype(v["dtype"], what)
        text = v["bytes"]
        if not isinstance(text, str) or len(text) != 2 * dtype.itemsize:
            raise self.fail(f"{what}: a {dtype} scalar needs {dtype.itemsize} bytes")
        try:
            data = bytes.fromhex(text)
        except ValueError:
            raise self.fail(f"{what}: scalar bytes are not hex") from None
        return np.frombuffer(data, dtype)[0]

    def _tag_array(self, v: dict, d: int, what: str) -> np.ndarray:
        v = self.fields(v, what, ("$", "file"))
        return self.load_array(self.expect(v["file"], str, what))

    def _shape(self, shape: Any, what: str) -> tuple | None:
        if shape is None:
            return None
        if (
            not isinstance(shape, tuple)
            or len(shape) > 64
            or not all(s is None or (type(s) is int and 0 <= s < 2**62) for s in shape)
        ):
            raise self.fail(f"{what}: a shape must be a tuple of sizes or None")
        return shape

    def _tag_aval(self, v: dict, d: int, what: str) -> AbstractValue:
        v = self.fields(v, what, ("$", "shape", "dtype"))
        return AbstractValue(
            self._shape(self.value(v["shape"], d, what), what), self.dtype(v["dtype"], what)
        )

    def _tag_dynamic_index(self, v: dict, d: int, what: str) -> DynamicIndex:
        v = self.fields(v, what, ("$", "position"))
        return DynamicIndex(self.expect(v["position"], int, what))

    def _tag_operand(self, v: dict, d: int, what: str) -> Operand:
        v = self.fields(v, what, ("$", "index"))
        return Operand(self.expect(v["index"], int, what))

    def _tag_call_template(self, v: dict, d: int, what: str) -> CallTemplate:
        v = self.fields(v, what, ("$", "args", "kwargs"))
        args, kwargs = self.value(v["args"], d, what), self.value(v["kwargs"], d, what)
        if (
            not isinstance(args, tuple)
            or not isinstance(kwargs, tuple)
            or not all(
                isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in kwargs
            )
        ):
            raise self.fail(f"{what}: a call template needs args and (name, value) kwargs")
        return CallTemplate(args, kwargs)

    def _tag_ufunc(self, v: dict, d: int, what: str) -> np.ufunc:
        name = self.fields(v, what, ("$", "name"))["name"]
        uf = getattr(np, name, None) if isinstance(name, str) and name.isidentifier() else None
        if not isinstance(uf, np.ufunc):
            raise self.fail(f"{what}: {name!r} is not a NumPy ufunc")
        return uf

    def _tag_numpy_function(self, v: dict, d: int, what: str) -> Callable[..., Any]:
        name = self.fields(v, what, ("$", "name"))["name"]
        fn = numpy_callables().get(name) if isinstance(name, str) else None
        if fn is None:
            raise self.fail(f"{what}: {name!r} is not a NumPy function this loader allows")
        return fn

    def _tag_random_function(self, v: dict, d: int, what: str) -> Callable[..., Any]:
        name = self.fields(v, what, ("$", "name"))["name"]
        fn = random_callables().get(name) if isinstance(name, str) else None
        if fn is None:
            raise self.fail(f"{what}: {name!r} is not a np.random function this loader allows")
        return fn

    def _tag_error(self, v: dict, d: int, what: str) -> BaseException:
        v = self.fields(v, what, ("$", "type", "args"))
        cls = ERROR_TYPES.get(v["type"]) if isinstance(v["type"], str) else None
        if cls is None:
            raise self.fail(f"{what}: {v['type']!r} is not an exception type this loader allows")
        args = self.value(v["args"], d, what)
        if not isinstance(args, tuple):
            raise self.fail(f"{what}: an error's args must be a tuple")
        return cls(*args)

    def _tag_pytype(self, v: dict, d: int, what: str) -> type:
        name = self.fields(v, what, ("$", "name"))["name"]
        t = PY_TYPES.get(name) if isinstance(name, str) else None
        if t is None:
            raise self.fail(f"{what}: {name!r} is not a type this loader allows")
        return t

    def _tag_variable(self, v: dict, d: int, what: str) -> Any:
        index = self.expect(self.fields(v, what, ("$", "index"))["index"], int, what)
        if not 0 <= index < len(self.variables):
            raise self.fail(f"{what}: variable #{index} is not in the manifest")
        return self.variables[index]

    def _tag_graph(self, v: dict, d: int, what: str) -> Graph:
        return self.graph(self.fields(v, what, ("$", "graph"))["graph"], d)


__all__ = [
    "DTYPE_KINDS",
    "ERROR_TYPES",
    "PY_TYPES",
    "Decoder",
    "Encoder",
    "numpy_callables",
    "numpy_function_name",
    "random_callables",
    "random_function_name",
    "where_text",
]
