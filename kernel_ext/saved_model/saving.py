"""``save(obj, path, signatures=None)``: write an object's graphs and variables as data.

The layout and every field are documented in docs/saved_model.md. Everything that cannot be
written as data — an opaque call to a user's Python function, a generator held by reference,
an argument type that is an object's identity — is refused here, before anything is written,
with the node (or parameter), its source line and the fix.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import Graph
from ..trace import (
    Dict,
    Literal,
    Sequence_,
    TensorSpec,
    TraceType,
    TreeNode,
    Variable,
    WeakRef,
)
from .codec import Encoder, numpy_result_types
from .format import (
    ARRAY_DIR,
    FORMAT_NAME,
    FORMAT_VERSION,
    GRAPH_DIR,
    IDENTIFIER,
    MANIFEST,
    SaveError,
)
from .loading import LoadedFunction, LoadedModel, Signature
from .targets import concrete_functions, variables_of

#: Parameter kinds a loaded function binds its arguments by.
KIND_NAMES = {
    inspect.Parameter.POSITIONAL_ONLY: "positional_only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional_or_keyword",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword_only",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


class _Writer:
    """Collects the arrays and variables of one saved model while its graphs are encoded."""

    def __init__(self) -> None:
        self.arrays: list[tuple[str, np.ndarray]] = []
        self._array_ids: dict[int, str] = {}
        self.variables: list[Variable] = []
        self._variable_ids: dict[int, int] = {}
        self.encoder = Encoder(self.add_array, self.variable_index)

    def add_array(self, value: np.ndarray) -> str:
        name = self._array_ids.get(id(value))
        if name is None:
            name = f"a{len(self.arrays)}.npy"
            self.arrays.append((name, value))
            self._array_ids[id(value)] = name
        return name

    def variable_index(self, var: Variable) -> int:
        index = self._variable_ids.get(id(var))
        if index is None:
            index = self._variable_ids[id(var)] = len(self.variables)
            self.variables.append(var)
        return index


def encode_type(t: TraceType, where: str) -> Any:
    """One parameter's trace type as data: a TensorSpec, a literal, or a tuple/list/dict of
    them. Other types (an object's identity, a Variable argument, a namedtuple or dataclass
    class) have no data form and are refused, naming the parameter."""
    if type(t) is TensorSpec:
        return {
            "kind": "tensor",
            "shape": None if t.shape is None else list(t.shape),
            "dtype": np.dtype(t.dtype).str,
        }
    if type(t) is Literal:
        value = t.value
        if value is None or type(value) in (bool, int, float, complex, str):
            return {"kind": "literal", "value": _ENC.value(value)}
    if type(t) is Sequence_ and t.container in (tuple, list):
        return {
            "kind": t.container.__name__,
            "items": [encode_type(c, f"{where}[{i}]") for i, c in enumerate(t.components)],
        }
    if type(t) is Dict:
        by_key = dict(zip(t.keys, t.components))
        return {
            "kind": "dict",
            "items": [[_ENC.value(k), encode_type(by_key[k], f"{where}[{k!r}]")] for k in t.order],
        }
    what = (
        f"a {t.type_name} object, traced by its identity"
        if type(t) is WeakRef
        else f"{t!r}, which names a Python object rather than data"
    )
    fix = (
        "draw the random values outside the kx.function and pass them in as an array"
        if type(t) is WeakRef and t.type_name == "Generator"
        else "pass arrays, Python numbers, strings or tuples/lists/dicts of them; keep variables "
        "as attributes of the saved object"
    )
    raise SaveError(
        f"cannot save the signature: argument '{where}' is {what}; a saved model "
        f"holds data only. Fix: {fix}."
    )


_ENC = Encoder(lambda a: "", lambda v: 0)  # for literals: no arrays, no variables


def encode_tree(tree: TreeNode, enc: Encoder) -> dict:
    """The returned structure as data (namedtuples by name and fields; dataclasses refused)."""
    container = None
    if tree.kind == "namedtuple":
        fields = list(getattr(tree.container, "_fields", ()))
        name = tree.container.__name__
        if not IDENTIFIER.match(name) or not all(IDENTIFIER.match(f) for f in fields):
            raise SaveError(
                f"cannot save the result structure: namedtuple {name!r} has "
                "field names that are not identifiers"
            )
        container = {"name": name, "fields": fields, "numpy": None}
        qualified = f"{tree.container.__module__}.{tree.container.__qualname__}"
        if numpy_result_types().get(qualified) is tree.container:
            container["numpy"] = qualified
    elif tree.kind == "dataclass":
        raise SaveError(
            f"cannot save the result structure: it returns a "
            f"{tree.container.__qualname__} dataclass, whose class is Python code. "
            "Fix: return a dict or a tuple of its fields."
        )
    return {
        "kind": tree.kind,
        "children": [encode_tree(c, enc) for c in tree.children],
        "index": tree.index,
        "value": enc.value(tree.value),
        "container": container,
        "keys": enc.value(tuple(tree.keys)),
    }


def encode_guard(guard: Any, enc: Encoder) -> Any:
    if guard is None:
        return None
    return enc.value(
        {
            "updated": tuple(guard.updated),
            "arrays": tuple(guard.arrays),
            "contiguous": tuple(guard.contiguous),
            "names": tuple(guard.names),
            "dict_orders": tuple(guard.dict_orders),
            "arrays_only": tuple(guard.arrays_only),
        }
    )


@dataclass
class Trace:
    """What one saved signature needs, from a ConcreteFunction or a loaded signature."""

    graph: Graph
    tree: TreeNode
    input_types: tuple
    kinds: list[tuple[str, Any]]
    text: str
    outputs: str
    guard: Any

    @classmethod
    def of(cls, source: Any) -> Trace:
        if isinstance(source, Signature):
            return cls(
                source.graph,
                source.tree,
                source.input_types,
                [(p.name, p.kind) for p in source.signature.parameters.values()],
                source.text,
                source.outputs,
                source.guard,
            )
        return cls(
            source.graph,
            source._tree,
            source.input_types,
            source.function_type.kinds,
            source.signature_text(),
            source.output_text(),
            source.guard,
        )


def functions_of(obj: Any, signatures: Any) -> dict[str, list[Trace]]:
    """The traces to save for ``obj``, by function name (a loaded model's own included)."""
    if isinstance(obj, LoadedModel):
        if signatures is not None:
            raise TypeError(
                "kx.saved_model.save(): a loaded model keeps its saved signatures; "
                "got signatures too. Fix: leave signatures out."
            )
        return {name: [Trace.of(s) for s in fn.signatures] for name, fn in obj.functions.items()}
    if isinstance(obj, LoadedFunction):
        return {obj.__name__: [Trace.of(s) for s in obj.signatures]}
    return {
        name: [Trace.of(cf) for cf in cfs]
        for name, cfs in concrete_functions(obj, signatures).items()
    }


def variables_held(obj: Any) -> dict[str, Variable]:
    """The variables ``obj`` holds as attributes, by attribute name."""
    if isinstance(obj, LoadedModel):
        return {name: v for name, v in vars(obj).items() if isinstance(v, Variable)}
    return variables_of(obj)


def package_version() -> str:
    """The installed kernel_ext's version (written into each model; "unknown" when the
    package runs from a source tree without its metadata)."""
    try:
        return importlib.metadata.version("jupyterlab-tffunction")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def save(obj: Any, path: str | os.PathLike, signatures: Any = None) -> None:
    """Save ``obj`` — a ``kx.function`` (its concrete functions, or those ``signatures``
    lists), a ``ConcreteFunction``, or an object holding ``kx.function``\\ s and
    ``kx.Variable``\\ s — as a directory at ``path`` (replaced if it is a saved model already).

    Raises :class:`~kernel_ext.saved_model.SaveError` (a ``ValueError``) naming the node, its
    line and the fix for anything that is code rather than data; nothing is written then.
    """
    functions = functions_of(obj, signatures)
    held = variables_held(obj)
    writer = _Writer()
    enc = writer.encoder
    for var in held.values():
        writer.variable_index(var)
    graphs: dict[str, dict] = {}
    manifest_functions: dict[str, list[dict]] = {}
    for fname, cfs in functions.items():
        if not IDENTIFIER.match(fname):
            raise SaveError(f"cannot save function {fname!r}: its name is not an identifier")
        entries = []
        for i, trace in enumerate(cfs):
            types_ = [encode_type(t, n) for t, (n, _) in zip(trace.input_types, trace.kinds)]
            graph_file = f"{fname}_{i}.json"
            graphs[graph_file] = enc.graph(trace.graph)
            entries.append(
                {
                    "graph": graph_file,
                    "parameters": [{"name": n, "kind": KIND_NAMES[k]} for n, k in trace.kinds],
                    "input_types": types_,
                    "signature": trace.text,
                    "outputs": trace.outputs,
                    "tree": encode_tree(trace.tree, enc),
                    "guard": encode_guard(trace.guard, enc),
                }
            )
        manifest_functions[fname] = entries
    attr_names = {id(v): n for n, v in held.items()}
    variables = []
    for i, var in enumerate(writer.variables):
        value = np.asarray(var.peek())
        file = f"v{i}.npy"
        writer.arrays.append((file, value))
        variables.append(
            {
                "name": str(var.name),
                "attribute": attr_names.get(id(var)),
                "file": file,
                "dtype": value.dtype.str,
                "shape": list(value.shape),
                "trainable": bool(var.trainable),
            }
        )
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "package_version": package_version(),
        "functions": manifest_functions,
        "variables": variables,
        "arrays": [name for name, _ in writer.arrays],
    }
    _write(os.fspath(path), manifest, graphs, writer.arrays)


def _write(
    path: str, manifest: dict, graphs: dict[str, dict], arrays: list[tuple[str, np.ndarray]]
) -> None:
    """Write into a fresh directory beside ``path``, then move it into place: a failed save
    leaves no half-written model."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    if os.path.exists(path) and not os.path.isfile(os.path.join(path, MANIFEST)):
        raise FileExistsError(
            f"kx.saved_model.save(): {path!r} exists and is not a saved "
            "model; refusing to replace it. Fix: choose a new path."
        )
    tmp = tempfile.mkdtemp(prefix=".kx-saving-", dir=parent)
    try:
        os.mkdir(os.path.join(tmp, GRAPH_DIR))
        os.mkdir(os.path.join(tmp, ARRAY_DIR))
        for name, graph in graphs.items():
            with open(os.path.join(tmp, GRAPH_DIR, name), "w", encoding="utf-8") as f:
                json.dump(graph, f, separators=(",", ":"), allow_nan=False)
        for name, value in arrays:
            np.save(os.path.join(tmp, ARRAY_DIR, name), np.asarray(value), allow_pickle=False)
        with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, allow_nan=False)
        if os.path.exists(path):
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__ = [
    "KIND_NAMES",
    "Trace",
    "encode_tree",
    "encode_type",
    "functions_of",
    "package_version",
    "save",
    "variables_held",
]
