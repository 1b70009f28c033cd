"""``load(path)``: a saved model back as callables, without the Python source that made it.

Loading reads JSON and ``.npy`` files only (``allow_pickle=False``), checks every field, and
rebuilds the graphs and the output structures; the executors compile the graphs as they
compile a fresh trace. Nothing named by a file is imported, unpickled or evaluated: NumPy
callables resolve against an allow-list (:mod:`.codec`). Whatever is wrong with the files
raises :class:`~.format.SavedModelFormatError`.
"""

from __future__ import annotations

import collections
import inspect
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends import BACKENDS, compile_for
from ..engine.guards import CallGuard
from ..ir import Graph
from ..trace import (
    Dict,
    Literal,
    Sequence_,
    TensorSpec,
    TraceType,
    TreeNode,
    Variable,
    make_trace_type,
)
from .codec import Decoder, numpy_result_types
from .format import (
    ARRAY_DIR,
    FILE_NAME,
    FORMAT_NAME,
    FORMAT_VERSION,
    GRAPH_DIR,
    IDENTIFIER,
    MANIFEST,
    MAX_ARRAY_BYTES,
    MAX_JSON_BYTES,
    SavedModelFormatError,
)

_KINDS = {
    "positional_only": inspect.Parameter.POSITIONAL_ONLY,
    "positional_or_keyword": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "var_positional": inspect.Parameter.VAR_POSITIONAL,
    "keyword_only": inspect.Parameter.KEYWORD_ONLY,
    "var_keyword": inspect.Parameter.VAR_KEYWORD,
}
_TREE_KINDS = frozenset(
    {
        "output",
        "const",
        "tuple",
        "list",
        "namedtuple",
        "dict",
        "input",
        "argument",
        "writeback",
        "replay",
    }
)


class _Files:
    """Reads the files of one saved model, within its directory and the size limits."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.allowed_arrays: set[str] = set()
        self._arrays: dict[str, np.ndarray] = {}

    def _path(self, folder: str | None, name: Any) -> str:
        if not isinstance(name, str) or not FILE_NAME.match(name):
            raise SavedModelFormatError(
                f"{self.root}: file name {name!r} is not a plain file name of the model"
            )
        path = os.path.join(self.root, folder, name) if folder else os.path.join(self.root, name)
        if os.path.islink(path) or (folder and os.path.islink(os.path.join(self.root, folder))):
            raise SavedModelFormatError(f"{path}: a link (a model's files are plain files)")
        return path

    def json(self, folder: str | None, name: str) -> Any:
        path = self._path(folder, name)
        try:
            size = os.path.getsize(path)
            if size > MAX_JSON_BYTES:
                raise SavedModelFormatError(
                    f"{path}: {size} bytes, more than the {MAX_JSON_BYTES} a model file may have"
                )
            with open(path, "rb") as f:
                data = f.read(MAX_JSON_BYTES + 1)
            return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
        except SavedModelFormatError:
            raise
        except FileNotFoundError:
            raise SavedModelFormatError(
                f"{path}: missing (not a saved model, or an incomplete one)"
            ) from None
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            raise SavedModelFormatError(
                f"{path}: not valid JSON ({type(e).__name__}: {str(e)[:200]})"
            ) from None

    def array(self, name: str) -> np.ndarray:
        if name in self._arrays:
            return self._arrays[name]
        if name not in self.allowed_arrays:
            raise SavedModelFormatError(
                f"{self.root}: array file {name!r} is not listed in the manifest"
            )
        path = self._path(ARRAY_DIR, name)
        try:
            size = os.path.getsize(path)
            if size > MAX_ARRAY_BYTES:
                raise SavedModelFormatError(
                    f"{path}: {size} bytes, more than the {MAX_ARRAY_BYTES} an array file may have"
                )
            with open(path, "rb") as f:
                version = np.lib.format.read_magic(f)
                shape, _, dtype = _read_header(f, version)
                if dtype.kind not in "biufc" or dtype.hasobject:
                    raise SavedModelFormatError(f"{path}: dtype {dtype} is not bool or numeric")
                need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                if need > size:
                    raise SavedModelFormatError(
                        f"{path}: truncated (the header promises "
                        f"{need} bytes of data, the file has {size})"
                    )
            value = np.load(path, allow_pickle=False)
        except SavedModelFormatError:
            raise
        except FileNotFoundError:
            raise SavedModelFormatError(f"{path}: missing") from None
        except Exception as e:  # noqa: BLE001 - NumPy's header parser raises many kinds
            # (SyntaxError, tokenize.TokenError, ...: it reads the header with
            # ast.literal_eval, which evaluates literals only, never code)
            raise SavedModelFormatError(
                f"{path}: not a valid .npy file ({type(e).__name__}: {str(e)[:200]})"
            ) from None
        value.setflags(write=False)
        self._arrays[name] = value
        return value


def _read_header(f: Any, version: tuple[int, int]) -> tuple[tuple, bool, np.dtype]:
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(f)
    raise ValueError(f"unsupported .npy version {version}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _fields(obj: Any, where: str, required: tuple[str, ...]) -> dict:
    if not isinstance(obj, dict) or set(obj) != set(required):
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        raise SavedModelFormatError(f"{where}: expected fields {sorted(required)}, got {got}")
    return obj


def _typed(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SavedModelFormatError(
            f"{where}: expected {kind.__name__}, got {type(value).__name__}"
        )
    return value


class Signature:
    """One saved concrete function: its parameters, input types, graph and output tree,
    compiled for ``backend`` on its first call."""

    def __init__(
        self,
        name: str,
        signature: inspect.Signature,
        input_types: tuple,
        graph: Graph,
        tree: TreeNode,
        guard: CallGuard | None,
        text: str,
        outputs: str,
        backend: str,
    ) -> None:
        self.name = name
        self.signature = signature
        self.names = list(signature.parameters)
        self.input_types = input_types
        self.graph = graph
        self.tree = tree
        self.guard = guard
        self.text = text
        self.outputs = outputs
        self.backend = backend
        self._run: Callable[..., Any] | None = None
        self.statics = {
            n: t.value for n, t in zip(self.names, input_types) if isinstance(t, Literal)
        }

    def compile(self) -> Callable[..., Any]:
        if self._run is None:
            exe = compile_for(
                self.graph, self.tree, len(self.names), backend=self.backend, name=self.name
            )
            self._run = exe.run
        return self._run

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """One value per parameter (static literals filled in when left out), or TypeError."""
        bound = self.signature.bind_partial(*args, **kwargs)
        for name, value in self.statics.items():
            bound.arguments.setdefault(name, value)
        bound = self.signature.bind(*bound.args, **bound.kwargs)
        values = []
        for p in self.signature.parameters.values():
            if p.name in bound.arguments:
                values.append(bound.arguments[p.name])
            elif p.kind is inspect.Parameter.VAR_POSITIONAL:
                values.append(())
            elif p.kind is inspect.Parameter.VAR_KEYWORD:
                values.append({})
        return tuple(values)

    def mismatch(self, values: tuple) -> str | None:
        """Why ``values`` do not fit this signature (naming the argument), or None."""
        for name, value, want in zip(self.names, values, self.input_types):
            try:
                got = make_trace_type(value, name)
            except Exception as e:  # noqa: BLE001 - an unhashable or untraceable argument
                return f"argument '{name}': {e}"
            if not got.is_subtype_of(want):
                return f"argument '{name}' is {_describe(got)}, expected {_describe(want)}"
        return None

    def __call__(self, values: tuple) -> Any:
        if self.guard is not None:
            reason = self.guard.violated(values)
            if reason is not None:
                raise ValueError(
                    f"{self.name}: {reason}; the saved function assumed otherwise when it was "
                    "traced and has no Python source to run instead. Fix: pass separate, "
                    "C-contiguous arrays (np.ascontiguousarray(x).copy()) in the traced order."
                )
        return self.compile()(*values)


def _describe(t: TraceType) -> str:
    describe = getattr(t, "describe", None)
    return describe() if describe is not None else repr(t)


class LoadedFunction:
    """A saved function: calls dispatch to the first saved signature the arguments fit;
    arguments that fit none raise ``TypeError`` naming the argument and the signatures."""

    def __init__(self, name: str, signatures: list[Signature]) -> None:
        self.__name__ = name
        self.signatures = signatures

    @property
    def concrete_signatures(self) -> list[str]:
        """Each saved signature on one line: ``"x: float32[None, 3] -> float32[None]"``."""
        return [f"{s.text} -> {s.outputs}" for s in self.signatures]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        reasons = []
        for sig in self.signatures:
            try:
                values = sig.bind(args, kwargs)
            except TypeError as e:
                reasons.append(str(e))
                continue
            reason = sig.mismatch(values)
            if reason is None:
                return sig(values)
            reasons.append(reason)
        listing = "; ".join(f"({s.text})" for s in self.signatures)
        raise TypeError(
            f"saved function '{self.__name__}' cannot run these arguments: "
            f"{reasons[0] if len(reasons) == 1 else ' / '.join(reasons)}. Saved "
            f"signatures: {listing}. Fix: pass arrays of the saved dtypes and "
            "shapes (None dims take any size), or save the function with a "
            "signature for these arguments."
        )

    def __repr__(self) -> str:
        return f"<kx.saved_model function {self.__name__}: {len(self.signatures)} signature(s)>"


class LoadedModel:
    """What :func:`load` returns: the saved functions and variables as attributes (a saved
    ``kx.function`` named ``f`` is ``loaded.f``; variables saved as attributes keep their
    attribute names), plus ``functions``, ``variables`` and ``manifest``."""

    def __init__(
        self,
        functions: dict[str, LoadedFunction],
        variables: list[Variable],
        attributes: dict[str, Variable],
        manifest: dict,
    ) -> None:
        self.functions = functions
        self.variables = variables
        self.manifest = manifest
        for name, fn in functions.items():
            setattr(self, name, fn)
        for name, var in attributes.items():
            setattr(self, name, var)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A model of one function is that function."""
        if len(self.functions) != 1:
            raise TypeError(
                f"this saved model holds {len(self.functions)} functions "
                f"({', '.join(self.functions)}); call one of them by name"
            )
        return next(iter(self.functions.values()))(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<kx.saved_model {', '.join(self.functions)}; {len(self.variables)} variable(s)>"


def load(path: str | os.PathLike, backend: str = "auto") -> LoadedModel:
    """Load a model :func:`~kernel_ext.saved_model.save` wrote; its functions run on
    ``backend`` (``"numpy"``, ``"auto"``, ``"numba"``...). Raises
    :class:`~kernel_ext.saved_model.SavedModelFormatError` (a ``ValueError``) for a missing,
    corrupt, altered or newer-format model."""
    if backend not in BACKENDS or backend == "dask":
        raise ValueError(
            f"kx.saved_model.load(backend={backend!r}): choose one of "
            f"{', '.join(repr(b) for b in BACKENDS if b != 'dask')}"
        )
    root = os.fspath(path)
    if not os.path.isdir(root):
        raise SavedModelFormatError(f"{root}: not a directory (a saved model is one)")
    files = _Files(root)
    try:
        return _load(files, root, backend)
    except SavedModelFormatError:
        raise
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        RecursionError,
        OverflowError,
        MemoryError,
        AssertionError,
        ArithmeticError,
        SyntaxError,
        NotImplementedError,
        np.linalg.LinAlgError,
    ) as e:
        # (every field is checked above; this is the backstop that keeps an altered file a
        # format error whatever part of the rebuilding it upsets)
        raise SavedModelFormatError(
            f"{root}: the saved model is inconsistent ({type(e).__name__}: {str(e)[:300]})"
        ) from None


def _load(files: _Files, root: str, backend: str) -> LoadedModel:
    manifest = files.json(None, MANIFEST)
    where = os.path.join(root, MANIFEST)
    if not isinstance(manifest, dict):
        raise SavedModelFormatError(f"{where}: expected a JSON object")
    if manifest.get("format") != FORMAT_NAME:
        raise SavedModelFormatError(
            f"{where}: format is {manifest.get('format')!r}, expected {FORMAT_NAME!r}"
        )
    version = manifest.get("format_version")
    if type(version) is not int:
        raise SavedModelFormatError(f"{where}: format_version must be an int")
    if version > FORMAT_VERSION:
        raise SavedModelFormatError(
            f"{where}: format version {version} is newer than this kernel_ext reads "
            f"(format version {FORMAT_VERSION}; saved by kernel_ext "
            f"{manifest.get('package_version')!r}). Fix: upgrade kernel_ext."
        )
    if version < 1:
        raise SavedModelFormatError(f"{where}: format version {version} does not exist")
    _fields(
        manifest,
        where,
        ("format", "format_version", "package_version", "functions", "variables", "arrays"),
    )
    for name in _typed(manifest["arrays"], list, f"{where}: arrays"):
        files._path(ARRAY_DIR, name)
        files.allowed_arrays.add(name)
    variables: list[Variable] = []
    attributes: dict[str, Variable] = {}
    for i, raw in enumerate(_typed(manifest["variables"], list, f"{where}: variables")):
        w = f"{where}: variable #{i}"
        raw = _fields(raw, w, ("name", "attribute", "file", "dtype", "shape", "trainable"))
        value = files.array(raw["file"])
        if value.dtype.str != raw["dtype"] or list(value.shape) != raw["shape"]:
            raise SavedModelFormatError(
                f"{w}: {raw['file']} holds {value.dtype}{value.shape}, "
                f"the manifest says {raw['dtype']}{raw['shape']}"
            )
        var = Variable(
            value,
            name=_typed(raw["name"], str, f"{w}: name"),
            trainable=_typed(raw["trainable"], bool, f"{w}: trainable"),
        )
        variables.append(var)
        attr = raw["attribute"]
        if attr is not None:
            if not isinstance(attr, str) or not IDENTIFIER.match(attr):
                raise SavedModelFormatError(f"{w}: attribute {attr!r} is not an identifier")
            attributes[attr] = var
    functions: dict[str, LoadedFunction] = {}
    raw_functions = _typed(manifest["functions"], dict, f"{where}: functions")
    for fname, entries in raw_functions.items():
        if (
            not IDENTIFIER.match(fname)
            or fname.startswith("__")
            or fname in ("functions", "variables", "manifest")
        ):
            raise SavedModelFormatError(f"{where}: function name {fname!r} is not allowed")
        sigs = []
        for i, raw in enumerate(_typed(entries, list, f"{where}: functions.{fname}")):
            sigs.append(_signature(files, root, fname, i, raw, variables, backend))
        if not sigs:
            raise SavedModelFormatError(f"{where}: function {fname!r} has no signatures")
        functions[fname] = LoadedFunction(fname, sigs)
    if set(functions) & set(attributes):
        raise SavedModelFormatError(f"{where}: a name is both a function and a variable")
    return LoadedModel(functions, variables, attributes, manifest)


def _signature(
    files: _Files, root: str, fname: str, i: int, raw: Any, variables: list[Variable], backend: str
) -> Signature:
    w = f"{os.path.join(root, MANIFEST)}: functions.{fname}[{i}]"
    raw = _fields(
        raw, w, ("graph", "parameters", "input_types", "signature", "outputs", "tree", "guard")
    )
    params = []
    for p in _typed(raw["parameters"], list, f"{w}: parameters"):
        p = _fields(p, f"{w}: a parameter", ("name", "kind"))
        name, kind = p["name"], _KINDS.get(p["kind"]) if isinstance(p["kind"], str) else None
        if not isinstance(name, str) or not IDENTIFIER.match(name) or kind is None:
            raise SavedModelFormatError(f"{w}: parameter {p!r} needs an identifier and a kind")
        params.append(inspect.Parameter(name, kind))
    try:
        signature = inspect.Signature(params)
    except ValueError as e:
        raise SavedModelFormatError(f"{w}: parameters do not form a signature ({e})") from None
    dec = Decoder(w, files.array, variables)
    types_ = _typed(raw["input_types"], list, f"{w}: input_types")
    if len(types_) != len(params):
        raise SavedModelFormatError(f"{w}: {len(types_)} input types for {len(params)} parameters")
    input_types = tuple(_decode_type(dec, t, 0) for t in types_)
    graph_dec = Decoder(os.path.join(root, GRAPH_DIR, str(raw["graph"])), files.array, variables)
    graph = graph_dec.graph(files.json(GRAPH_DIR, raw["graph"]))
    tree = _decode_tree(dec, raw["tree"], 0, len(graph.outputs))
    guard = None
    if raw["guard"] is not None:
        g = dec.value(raw["guard"], 0, "guard")
        keys = ("updated", "arrays", "contiguous", "names", "dict_orders", "arrays_only")
        if (
            not isinstance(g, dict)
            or set(g) != set(keys)
            or not all(isinstance(g[k], tuple) for k in keys)
        ):
            raise SavedModelFormatError(f"{w}: guard must hold {', '.join(keys)}")
        guard = CallGuard(
            list(g["updated"]),
            list(g["arrays"]),
            list(g["contiguous"]),
            g["names"],
            g["dict_orders"],
            g["arrays_only"],
        )
    text = _typed(raw["signature"], str, f"{w}: signature")
    outputs = _typed(raw["outputs"], str, f"{w}: outputs")
    sig = Signature(fname, signature, input_types, graph, tree, guard, text, outputs, backend)
    if backend == "numpy":
        sig.compile()  # (cheap: a graph the executor cannot build fails here, at load)
    return sig


def _decode_type(dec: Decoder, raw: Any, depth: int) -> TraceType:
    if depth > 32 or not isinstance(raw, dict):
        raise dec.fail("an input type must be an object (and not nested too deeply)")
    kind = raw.get("kind")
    if kind == "tensor":
        raw = dec.fields(raw, "a tensor type", ("kind", "shape", "dtype"))
        shape = raw["shape"]
        if shape is not None:
            if (
                not isinstance(shape, list)
                or len(shape) > 64
                or not all(d is None or (type(d) is int and d >= 0) for d in shape)
            ):
                raise dec.fail("a tensor type's shape must be a list of sizes or null")
            shape = tuple(shape)
        return TensorSpec(shape, dec.dtype(raw["dtype"], "a tensor type"))
    if kind == "literal":
        value = dec.value(dec.fields(raw, "a literal", ("kind", "value"))["value"], 0, "a literal")
        if not (value is None or type(value) in (bool, int, float, complex, str)):
            raise dec.fail("a literal must be None, a bool, number or string")
        return Literal(value)
    if kind in ("tuple", "list"):
        raw = dec.fields(raw, "a sequence type", ("kind", "items"))
        items = dec.expect(raw["items"], list, "a sequence type's items")
        return Sequence_(
            tuple if kind == "tuple" else list, [_decode_type(dec, c, depth + 1) for c in items]
        )
    if kind == "dict":
        raw = dec.fields(raw, "a dict type", ("kind", "items"))
        out = {}
        for pair in dec.expect(raw["items"], list, "a dict type's items"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise dec.fail("a dict type's item must be a [key, type] pair")
            key = dec.value(pair[0], 0, "a dict key")
            if not (key is None or type(key) in (bool, int, float, str)):
                raise dec.fail("a dict type's key must be a Python scalar or string")
            out[key] = _decode_type(dec, pair[1], depth + 1)
        return Dict(out)
    raise dec.fail(f"unknown input type kind {kind!r}")


def _decode_tree(dec: Decoder, raw: Any, depth: int, n_outputs: int) -> TreeNode:
    if depth > 64:
        raise dec.fail("the output structure is nested too deeply")
    raw = dec.fields(
        raw, "an output structure", ("kind", "children", "index", "value", "container", "keys")
    )
    kind = raw["kind"]
    if kind not in _TREE_KINDS:
        raise dec.fail(f"unknown output structure kind {kind!r}")
    children = tuple(
        _decode_tree(dec, c, depth + 1, n_outputs)
        for c in dec.expect(raw["children"], list, "children")
    )
    index = dec.expect(raw["index"], int, "an output index")
    if kind in ("output", "input") and not 0 <= index < n_outputs:
        raise dec.fail(f"output index {index} is not one of the graph's {n_outputs} outputs")
    value = dec.value(raw["value"], 0, "an output structure's value")
    keys = dec.value(raw["keys"], 0, "an output structure's keys")
    if not isinstance(keys, tuple):
        raise dec.fail("an output structure's keys must be a tuple")
    container: Any = None
    if kind == "namedtuple":
        c = dec.fields(raw["container"], "a namedtuple", ("name", "fields", "numpy"))
        fields = dec.expect(c["fields"], list, "a namedtuple's fields")
        if (
            not isinstance(c["name"], str)
            or not IDENTIFIER.match(c["name"])
            or not all(
                isinstance(f, str) and IDENTIFIER.match(f) and not f.startswith("_") for f in fields
            )
            or len(fields) != len(children)
        ):
            raise dec.fail("a namedtuple needs an identifier name and one field per item")
        if c["numpy"] is not None:
            container = (
                numpy_result_types().get(c["numpy"]) if isinstance(c["numpy"], str) else None
            )
            if container is None or list(container._fields) != fields:
                raise dec.fail(f"{c['numpy']!r} is not a NumPy result type with these fields")
        else:
            try:
                container = collections.namedtuple(  # type: ignore[misc, no-redef]
                    c["name"], fields
                )
            except ValueError as e:
                raise dec.fail(f"namedtuple {c['name']!r}: {e}") from None
    elif raw["container"] is not None:
        raise dec.fail(f"a {kind} output structure has no container")
    _check_tree_value(dec, kind, value, keys, children)
    return TreeNode(kind, children, index, value, container, keys)


def _check_tree_value(dec: Decoder, kind: str, value: Any, keys: tuple, children: tuple) -> None:
    """The value forms the executors read (:class:`~kernel_ext.trace.pytree.TreeNode`)."""
    if kind == "output":
        ok = (
            value is None
            or value in (bool, int, float, complex, np.ndarray)
            or value == "computed"
            or (
                isinstance(value, tuple)
                and len(value) == 2
                and value[0] in ("like", "argument", "asarray")
                and _is_path(value[1])
            )
        )
    elif kind == "const":
        ok = value is None or type(value) in (bool, int, float, complex, str)
    elif kind in ("input", "argument"):
        ok = _is_path(value)
    elif kind == "writeback":
        ok = (
            isinstance(value, tuple)
            and all(_is_path(p) for p in value)
            and len(value) == len(children) - 1
        )
    elif kind == "replay":
        ok = (
            isinstance(value, tuple)
            and len(value) == len(children) - 1
            and all(
                isinstance(p, tuple)
                and len(p) == 2
                and _is_path(p[0])
                and p[1] in ("list", "dict", "attrs")
                for p in value
            )
        )
    else:
        ok = value is None
    if kind == "dict":
        ok = ok and len(keys) == len(children)
    if kind in ("writeback", "replay") and not children:
        ok = False
    if not ok:
        raise dec.fail(f"a {kind} output structure holds an unexpected value {value!r:.80}")


def _is_path(path: Any) -> bool:
    return (
        isinstance(path, tuple)
        and bool(path)
        and all(isinstance(s, tuple) and len(s) == 2 for s in path)
        and path[0][0] == "arg"
        and type(path[0][1]) is int
        and all(
            (k == "item" and type(v) is int)
            or k == "key"
            or (k == "attr" and isinstance(v, str) and v.isidentifier() and not v.startswith("_"))
            for k, v in path[1:]
        )
    )


__all__ = ["LoadedFunction", "LoadedModel", "Signature", "load"]
