"""Notebook cells and traced functions: cell numbers for code, cell-as-function, edit history.

Three jobs, all about mapping between what IPython runs and what the user sees:

* **Where is this code?** IPython compiles every cell under a generated file name (a temporary
  ``/tmp/ipykernel_…/….py`` under ipykernel, ``<ipython-input-5-…>`` in a terminal) and its
  compiler remembers which execution count each name belongs to (``shell.compile``'s
  ``_filename_map``). :class:`CellLocator` turns ``"<that file>:3"`` into ``"cell [5], line 3"``
  so explanations never show a temporary file name.
* **A cell as a function.** :func:`build_cell_function` turns a cell body into
  ``def NAME(<inputs>): <body>; return (<outputs>)``: inputs are the names the body reads from
  the namespace before assigning them, outputs the names it assigns. The generated source keeps
  the cell's own line numbers (line 1 is the ``%%tffunction`` line), so tracebacks, call sites
  and AutoGraph all point at the right cell line.
* **Re-runs and edits.** :class:`CellFunctionRegistry` remembers, per function name (or per
  cell for unnamed cell functions), the source and options it was made from. Re-running an
  unchanged cell hands back the same :class:`~kernel_ext.Function` (its traces and history
  survive); an edit makes a new one whose history says ``"cell [12] edited"``.
"""

from __future__ import annotations

import ast
import io
import itertools
import linecache
import os
import sys
import tempfile
import tokenize
import types
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ..engine.explain import fingerprint

__all__ = [
    "CellError",
    "CellFunctionInfo",
    "CellFunctionRegistry",
    "CellLocator",
    "CellProgram",
    "analyse_cell",
    "build_cell_function",
    "cell_call_site",
    "cell_info",
    "check_cell",
    "compile_cell_source",
]


# ---------------------------------------------------------------------------------------------
# Where is this code?
# ---------------------------------------------------------------------------------------------


class CellLocator:
    """Maps the file names IPython compiles cells under to execution counts."""

    def __init__(self, shell: Any = None) -> None:
        self.shell = shell
        self._own: dict[str, int] = {}  # names compiled without a shell (tests, scripts)

    def remember(self, filename: str, number: int) -> None:
        self._own[filename] = number

    def cell_number(self, filename: str) -> int | None:
        """The execution count of the cell compiled under ``filename``, or None."""
        if filename in self._own:
            return self._own[filename]
        mapping = getattr(getattr(self.shell, "compile", None), "_filename_map", None)
        number = mapping.get(filename) if isinstance(mapping, dict) else None
        return number if isinstance(number, int) else None

    def call_site(self, raw: str) -> str:
        """``"/tmp/ipykernel_1/123.py:3"`` -> ``"cell [5], line 3"``; files -> ``"x.py, line 3"``.

        A temporary name that is not a known cell becomes ``"a cell, line 3"``: never show
        the kernel's temporary file names. ``""`` (no call site) is ``"unknown"``.
        """
        known = self.known_call_site(raw)
        if known is not None:
            return known
        if not raw:
            return "unknown"
        filename, _, line = raw.rpartition(":")
        if not filename or not line.isdigit():
            return raw
        return f"a cell, line {line}"

    def known_call_site(self, raw: str) -> str | None:
        """Like :meth:`call_site`, but None for what cannot be named exactly: no call site,
        not ``file:line``, or a temporary file that is no known cell (the sidebar leaves the
        call site out rather than show a placeholder)."""
        filename, _, line = raw.rpartition(":")
        if not filename or not line.isdigit():
            return None
        number = self.cell_number(filename)
        if number is not None:
            return f"cell [{number}], line {line}"
        if filename.startswith("<") or is_temporary_file(filename):
            return None
        return f"{os.path.basename(filename)}, line {line}"

    def defining_cell(self, function: Any) -> int | None:
        """The cell a Function's Python code was defined in (None outside cells)."""
        info = cell_info(function)
        if info is not None and info.cell is not None:
            return info.cell
        code = getattr(getattr(function, "python_function", None), "__code__", None)
        return self.cell_number(code.co_filename) if code is not None else None


def cell_call_site(raw: str) -> str:
    """``raw`` (``file:line``) with a notebook cell's file named ``"cell [5], line 3"`` when
    running under IPython, whether or not the extension is loaded; anything else as is.
    The package installs it as the default call-site formatter when imported under IPython
    (:func:`kernel_ext.engine.explain.set_default_call_site_formatter`)."""
    ipython = sys.modules.get("IPython")
    get_shell = getattr(ipython, "get_ipython", None)
    shell = get_shell() if get_shell is not None else None
    filename, _, line = raw.rpartition(":")
    if shell is None or not filename or not line.isdigit():
        return raw
    number = CellLocator(shell).cell_number(filename)
    return raw if number is None else f"cell [{number}], line {line}"


def current_cell_number(shell: Any) -> int:
    """The execution count of the cell running now (call from inside a magic).

    The running cell's code frame is on the stack under a file name IPython's compiler
    mapped to its number; that is exact whatever the IPython version (IPython 9 increments
    ``execution_count`` before running a cell, earlier versions after).
    """
    mapping = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if isinstance(mapping, dict):
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None:
            number = mapping.get(frame.f_code.co_filename)
            if isinstance(number, int):
                return number
            frame = frame.f_back
    count = int(getattr(shell, "execution_count", 0) or 0)
    return max(count - 1, 0) if _IPYTHON_INCREMENTS_FIRST else count


def _ipython_increments_first() -> bool:
    try:
        import IPython

        return int(IPython.__version__.split(".")[0]) >= 9
    except Exception:  # noqa: BLE001
        return True


_IPYTHON_INCREMENTS_FIRST = _ipython_increments_first()


def is_temporary_file(filename: str) -> bool:
    """True for IPython's per-cell temporary files (never shown to users as call sites)."""
    try:
        temp = os.path.realpath(tempfile.gettempdir())
        return os.path.realpath(filename).startswith(temp + os.sep)
    except (OSError, ValueError):
        return False


_fallback_names = itertools.count(1)


def compile_cell_source(
    source: str, number: int, shell: Any = None, locator: CellLocator | None = None
) -> str:
    """Register ``source`` as the code of cell ``number``; returns the file name to compile
    it under. Through IPython's compiler when there is a shell (so tracebacks and call sites
    say "cell [n]"), else a private ``<kx-cell-…>`` name; in both cases ``linecache`` holds the
    text, so ``inspect.getsource`` (and AutoGraph) can read it back.
    """
    compiler = getattr(shell, "compile", None)
    if compiler is not None and hasattr(compiler, "cache"):
        filename = compiler.cache(source, number)
    else:
        filename = f"<kx-cell-{number}-{next(_fallback_names)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if locator is not None:
        locator.remember(filename, number)
    return filename


# ---------------------------------------------------------------------------------------------
# A cell as a function
# ---------------------------------------------------------------------------------------------

VALUE_NAME = "__kx_value__"


@dataclass
class CellProgram:
    """What a cell body reads, writes and shows."""

    reads: list[str]  # names read before being assigned, in order of appearance
    outputs: list[str]  # names assigned at the top level (loop targets excluded)
    has_value: bool  # the last statement is an expression (shown as Out[n])
    tree: ast.Module


def analyse_cell(body: str) -> CellProgram:
    """Parse a cell body (line numbers as in the cell: line 1 is the magic line)."""
    tree = ast.parse("\n" + body)
    flow = _Flow()
    for stmt in tree.body:
        flow.visit(stmt)
    outputs = [n for n in flow.stored if n not in flow.not_outputs and not n.startswith("_")]
    has_value = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    return CellProgram(list(flow.reads), outputs, has_value, tree)


class CellError(ValueError):
    """A cell ``%%tffunction`` cannot run as written: ``line``/``column`` (cell lines, line 1
    the magic line; 0-based column) locate the construct, the message says why and the fix."""

    def __init__(self, message: str, line: int, column: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _cell_scope(tree: ast.Module) -> list[ast.AST]:
    """The nodes of the cell's own scope in source order: nested ``def``/``class``/``lambda``
    bodies excluded (their decorators, defaults and base classes are the cell's)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, _NESTED_SCOPES):
            outer: list[ast.AST] = list(getattr(node, "decorator_list", []))
            if isinstance(node, ast.ClassDef):
                outer += [*node.bases, *(k.value for k in node.keywords)]
            else:
                a = node.args
                outer += [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
            stack.extend(outer)
        else:
            stack.extend(ast.iter_child_nodes(node))
    return sorted((n for n in found if hasattr(n, "lineno")), key=_position)


class _Positioned(Protocol):
    """A node with a source position (a statement, an expression, an argument, ...)."""

    lineno: int
    col_offset: int


def _position(node: ast.AST) -> tuple[int, int]:
    """The line and column of a node that has them."""
    placed = cast("_Positioned", node)
    return placed.lineno, placed.col_offset


def check_cell(tree: ast.Module, as_function: bool) -> None:
    """Refuse, with :class:`CellError`, what would not do in a ``%%tffunction`` cell what
    the same code does in a plain cell (the first such construct, in source order).

    In both kinds of cell: ``async def`` (kx.function traces no coroutine), and in the cell's
    own scope ``return``, ``yield``, ``await``/``async for``/``async with`` and
    ``nonlocal``: a plain cell refuses or awaits them, a cell *function* would return, make
    a generator or a coroutine. A cell run as a function (``as_function``) also refuses
    ``global`` (its outputs are written back anyway; the name would be a parameter too),
    ``del NAME`` (its inputs are parameters: the notebook's name would survive) and
    ``from m import *`` (not allowed in a function). ``tree`` is :func:`analyse_cell`'s.
    """
    for node in _cell_scope(tree):
        problem = _problem(node, as_function)
        if problem is not None:
            raise CellError(problem, *_position(node))


def _problem(node: ast.AST, as_function: bool) -> str | None:
    where = f"at line {getattr(node, 'lineno', '?')}"
    cell_kind = (
        "a cell function" if as_function else "the statements of a cell that defines functions"
    )
    if isinstance(node, ast.AsyncFunctionDef):
        return (
            f"'async def {node.name}' {where}: kx.function cannot trace a coroutine "
            f"function, so %%tffunction would lose or mistrace it. Fix: write "
            f"'def {node.name}', or define it in a cell without %%tffunction"
        )
    if isinstance(node, ast.Return):
        if as_function:
            return (
                f"'return' {where}: a cell function returns the names the cell assigns "
                "and the value of its last line; a 'return' would skip the rest and "
                "set them to its value. Fix: end the cell with the expression to show "
                "(write 'x * 5', not 'return x * 5'), or write a def"
            )
        return (
            f"'return' {where} is outside any def: {cell_kind} run as a plain cell "
            "does. Fix: move it into the def, or remove it"
        )
    if isinstance(node, (ast.Yield, ast.YieldFrom)):
        word = "yield from" if isinstance(node, ast.YieldFrom) else "yield"
        return (
            f"'{word}' {where} would make {cell_kind} a generator, which kx.function "
            "cannot trace. Fix: collect the values in a list, or write the generator as "
            "a def in a cell without %%tffunction"
        )
    if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)) or (
        isinstance(node, _COMPREHENSIONS) and any(g.is_async for g in node.generators)
    ):
        word = {ast.Await: "await", ast.AsyncFor: "async for", ast.AsyncWith: "async with"}.get(
            type(node), "async for"
        )
        return (
            f"'{word}' {where}: traced code runs synchronously, so {cell_kind} cannot "
            f"await. Fix: run the awaiting code in a cell without %%tffunction, then "
            "use its result here"
        )
    if isinstance(node, ast.Nonlocal):
        return (
            f"'nonlocal {', '.join(node.names)}' {where}: a cell has no enclosing "
            "function. Fix: remove it"
        )
    if not as_function:
        return None
    if isinstance(node, ast.Global):
        names = ", ".join(node.names)
        return (
            f"'global {names}' {where}: a cell function already writes the names it "
            f"assigns back to the notebook, and reads the names it uses from it; "
            f"'global' would make {names} a global of the traced function (assigned once, "
            "while tracing). Fix: remove the 'global' statement"
        )
    if isinstance(node, ast.Delete):
        deleted = _deleted_names(node.targets)  # del d[k] / del obj.attr mutate: allowed
        if deleted:
            listed = ", ".join(deleted)
            return (
                f"'del {listed}' {where}: a cell function takes the notebook's values as "
                f"parameters and writes its outputs back, so 'del' cannot remove "
                f"{listed} from the notebook. Fix: run 'del {listed}' in a cell of its own"
            )
    if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
        return (
            f"'from {node.module or '.'} import *' {where}: a function cannot import *. "
            f"Fix: import the names the cell uses (from {node.module or '.'} import a, b), "
            "or run the import in a cell of its own"
        )
    return None


def _deleted_names(targets: list[ast.expr]) -> list[str]:
    names: list[str] = []
    for t in targets:
        if isinstance(t, ast.Name):
            names.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            names += _deleted_names(t.elts)
    return names


class _Flow(ast.NodeVisitor):
    """Which names a block reads before it (definitely) assigns them.

    Assignments inside branches and loops only count as "assigned" for the code after them
    when every path assigns (an ``if`` with both branches); a name read in a loop body before
    the body assigns it is read from outside (``acc = acc + x``).
    """

    def __init__(self, assigned: Iterable[str] = (), record_stores: bool = True) -> None:
        self.assigned: set[str] = set(assigned)
        self.reads: dict[str, None] = {}
        self.stored: dict[str, None] = {}
        self.not_outputs: set[str] = set()
        self.record_stores = record_stores

    # -- names -------------------------------------------------------------------------------
    def _read(self, name: str) -> None:
        if name not in self.assigned:
            self.reads.setdefault(name, None)

    def _store(self, name: str, output: bool = True) -> None:
        self.assigned.add(name)
        if self.record_stores:
            self.stored.setdefault(name, None)
            if not output:
                self.not_outputs.add(name)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._read(node.id)
        elif isinstance(node.ctx, ast.Store):
            self._store(node.id)

    # -- statements --------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self._read(node.target.id)
        self.visit(node.value)
        self.visit(node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self.visit(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.visit(node.target)

    def _branch(self, body: list[ast.stmt]) -> set[str]:
        saved = set(self.assigned)
        for stmt in body:
            self.visit(stmt)
        result, self.assigned = self.assigned, saved
        return result

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        a = self._branch(node.body)
        b = self._branch(node.orelse)
        self.assigned |= a & b

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        saved = set(self.assigned)
        for name in _target_names(node.target):
            self._store(name, output=False)
        for stmt in node.body:
            self.visit(stmt)
        self.assigned = saved
        self._branch(node.orelse)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._branch(node.body)
        self._branch(node.orelse)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            for name in _target_names(item.optional_vars):
                self._store(name, output=False)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_Try(self, node: ast.Try) -> None:
        self._branch(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                self.visit(handler.type)
            self._branch(handler.body)
        self._branch(node.orelse)
        self._branch(node.finalbody)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self._store((alias.asname or alias.name).split(".")[0], output=False)

    visit_ImportFrom = visit_Import

    # -- nested scopes: their free names are reads, their stores are their own ---------------
    def _nested(
        self, args: ast.arguments | None, body: Sequence[ast.AST], extra: Iterable[str] = ()
    ) -> None:
        params = set(extra)
        if args is not None:
            for d in [*args.defaults, *[k for k in args.kw_defaults if k is not None]]:
                self.visit(d)
            params |= {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        inner = _Flow(self.assigned | params, record_stores=False)
        for stmt in body:
            inner.visit(stmt)
        # A name a nested scope both reads and assigns is its own local: not a read of ours.
        local = inner.assigned - self.assigned - params
        for name in inner.reads:
            if name not in local:
                self._read(name)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self._nested(node.args, node.body)
        self._store(node.name, output=False)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(d)
        self._nested(None, node.body)
        self._store(node.name, output=False)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._nested(node.args, [node.body])

    def _comprehension(self, node: Any, elements: list[ast.AST]) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        names: set[str] = set()
        body: list[ast.AST] = []
        for i, gen in enumerate(generators):
            names |= set(_target_names(gen.target))
            if i:
                body.append(gen.iter)
            body.extend(gen.ifs)
        self._nested(None, [*body, *elements], extra=names)

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])


def _target_names(target: ast.AST | None) -> list[str]:
    if target is None:
        return []
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def is_static_global(value: Any) -> bool:
    """Values a cell function keeps reading as globals instead of taking as inputs: modules,
    functions, classes, ``kx.Function`` s and ``kx.Variable`` s (read at every call)."""
    from ..engine import Function
    from ..trace import Variable

    return isinstance(
        value,
        (
            types.ModuleType,
            type,
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            Function,
            Variable,
        ),
    ) or (callable(value) and not hasattr(value, "__array__"))


def _continuation_rows(source: str) -> set[int]:
    """1-based rows that lie inside a multi-line token (string contents): never re-indent."""
    rows: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.end[0] > tok.start[0]:
                rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return rows


def build_cell_source(
    name: str, params: list[str], body: str, outputs: list[str], value_at: tuple[int, int] | None
) -> str:
    """``def name(params):`` + the body indented + ``return (outputs...)``, keeping the cell's
    line numbers (``value_at`` is where the last expression starts: it is assigned to
    ``__kx_value__`` and returned last)."""
    lines = ("\n" + body).split("\n")
    if value_at is not None:
        row, col = value_at
        text = lines[row - 1]
        lines[row - 1] = text[:col] + f"{VALUE_NAME} = " + text[col:]
    keep = _continuation_rows("\n".join(lines))
    out = [f"def {name}({', '.join(params)}):"]
    for row, text in enumerate(lines[1:], start=2):
        out.append(text if row in keep or not text.strip() else "    " + text)
    results = [*outputs, *([VALUE_NAME] if value_at is not None else [])]
    out.append(f"    return ({', '.join(results)}{',' if results else ''})")
    return "\n".join(out) + "\n"


def build_cell_function(
    name: str,
    body: str,
    namespace: dict,
    *,
    number: int,
    first: Iterable[str] = (),
    shell: Any = None,
    locator: CellLocator | None = None,
) -> tuple[types.FunctionType, list[str], list[str], bool]:
    """Turn a cell body into a Python function over the namespace.

    Returns ``(function, params, outputs, has_value)``: call ``function(*[namespace[p] for p
    in params])``; it returns the outputs' values in order, then the last expression's value
    when ``has_value``. ``first`` are parameters to put first (the ``--input-signature``
    order). Names read from the namespace that are modules, functions, classes or
    ``kx.Variable`` s stay globals; every other value read is an input.
    """
    program = analyse_cell(body)
    inputs = [n for n in program.reads if n in namespace and not is_static_global(namespace[n])]
    first = [n for n in first]
    params = first + [n for n in inputs if n not in first]
    value_at = None
    if program.has_value:
        last = program.tree.body[-1]
        value_at = (last.lineno, last.col_offset)
    source = build_cell_source(name, params, body, program.outputs, value_at)
    filename = compile_cell_source(source, number, shell, locator)
    code = compile(source, filename, "exec")
    scope: dict[str, Any] = {}
    exec(code, namespace, scope)  # noqa: S102 - the user's own cell, as IPython would run it
    return scope[name], params, program.outputs, program.has_value


# ---------------------------------------------------------------------------------------------
# Re-runs and edits
# ---------------------------------------------------------------------------------------------


@dataclass
class CellFunctionInfo:
    """What the notebook knows about a Function made by ``%%tffunction``."""

    name: str
    cell: int | None  # execution count of the cell that made this version
    mode: str  # "def" (a function the cell defines) or "cell"
    history: list[str] = field(default_factory=list)  # "cell [3] defined", "cell [7] edited"
    params: list[str] = field(default_factory=list)  # cell mode: inputs, in order
    outputs: list[str] = field(default_factory=list)  # cell mode: names written back
    has_value: bool = False
    strict: bool = False
    replaced_by: int | None = None  # the cell whose edit replaced this version

    @property
    def cell_text(self) -> str | None:
        return None if self.cell is None else f"[{self.cell}]"


_infos: weakref.WeakKeyDictionary[Any, CellFunctionInfo] = weakref.WeakKeyDictionary()


def cell_info(function: Any) -> CellFunctionInfo | None:
    """The notebook's record of a Function made by ``%%tffunction`` (None otherwise)."""
    try:
        return _infos.get(function)
    except TypeError:
        return None


def set_cell_info(function: Any, info: CellFunctionInfo) -> None:
    _infos[function] = info


@dataclass
class _Version:
    identity: tuple  # source dump + options + defaults: equal means unchanged
    function_ref: Callable[[], Any]  # weak (def mode) or strong (unnamed cell functions)
    info: CellFunctionInfo


class CellFunctionRegistry:
    """The current version of each ``%%tffunction`` function, by key.

    Keys are function names (``def`` cells and named cell functions) or a cell's id / source
    (unnamed cell functions). Functions bound in the user's namespace are held weakly; unnamed
    cell functions, which nothing else holds, strongly (the oldest are forgotten past
    ``max_unnamed``).
    """

    def __init__(self, max_unnamed: int = 64) -> None:
        self._versions: dict[str, _Version] = {}
        self._unnamed_order: list[str] = []
        self.max_unnamed = max_unnamed

    def lookup(self, key: str, identity: tuple) -> tuple[Any, CellFunctionInfo | None]:
        """``(function, info)`` of the unchanged current version, or ``(None, previous info)``
        when there is none or it changed (``previous`` is None if there was no version)."""
        version = self._versions.get(key)
        if version is None:
            return None, None
        function = version.function_ref()
        if function is None:
            return None, None
        if version.identity == identity:
            return function, version.info
        return None, version.info

    def store(
        self, key: str, identity: tuple, function: Any, info: CellFunctionInfo, strong: bool = False
    ) -> None:
        if strong:
            self._versions[key] = _Version(identity, lambda: function, info)
            if key in self._unnamed_order:
                self._unnamed_order.remove(key)
            self._unnamed_order.append(key)
            for old in self._unnamed_order[: -self.max_unnamed]:
                self._versions.pop(old, None)
            del self._unnamed_order[: -self.max_unnamed]
        else:
            self._versions[key] = _Version(identity, weakref.ref(function), info)
        set_cell_info(function, info)

    def previous_function(self, key: str) -> Any:
        """The function currently stored under ``key`` (None if none or dead)."""
        version = self._versions.get(key)
        return None if version is None else version.function_ref()

    def functions(self) -> list[Any]:
        return [f for f in (v.function_ref() for v in self._versions.values()) if f is not None]


def defaults_identity(fn: Any) -> tuple:
    """Default argument values as comparable fingerprints (identity for untracked values)."""
    values = [
        *(getattr(fn, "__defaults__", None) or ()),
        *sorted((getattr(fn, "__kwdefaults__", None) or {}).items()),
    ]
    out = []
    for v in values:
        fp = fingerprint(v)
        out.append(fp if fp is not None else ("id", id(v)))
    return tuple(out)


def node_identity(node: ast.AST) -> str:
    """The source of a ``def`` (or a cell) as compared across runs: line numbers ignored."""
    return ast.dump(node, include_attributes=False)
