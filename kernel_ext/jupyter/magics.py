"""The ``%%tffunction`` cell magic and the ``%retrace_report`` and ``%tffunction_save`` line
magics.

All are thin: they parse their line with IPython's ``magic_arguments`` (bad usage raises
``UsageError``), then call the public API (``kx.function``), the cell helpers
(:mod:`.cells`), the report (:mod:`.report`), the monitor (:mod:`.monitor`) and the exporters
(``kx.saved_model``; ``kernel_ext.onnx`` where installed).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import keyword
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import (
    MagicHelpFormatter,
    argument,
    kwds,
    magic_arguments,
    parse_argstring,
)

from .. import errors
from ..engine import Function, explain, registry
from ..engine import function as kx_function
from ..trace.types import TensorSpec
from . import cells, exporting, records, units
from . import report as report_module
from .cells import (
    CellError,
    CellFunctionInfo,
    CellFunctionRegistry,
    CellLocator,
    analyse_cell,
    check_cell,
    compile_cell_source,
    defaults_identity,
    is_static_global,
    node_identity,
)
from .monitor import Monitor
from .signature_spec import SignatureSpecError, parse_signature

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["TFFunctionMagics"]


def _unquote(text: str) -> str:
    # IPython's argument splitter keeps the quotes around a quoted value.
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _parse_line(magic: Any, line: str) -> Any:
    """The magic line's arguments; an unbalanced quote is a UsageError at its column (the
    argument splitter raises ValueError from inside IPython)."""
    try:
        return parse_argstring(magic, line)
    except ValueError as e:
        column = _open_quote(line)
        where = f" at column {column}\n  {line}\n  {' ' * column}^" if column is not None else ""
        raise UsageError(
            f"%%tffunction: the magic line cannot be split into arguments "
            f"({e}). Fix: close the quote, or write a quote inside a value as "
            f'\\" or within the other kind of quotes{where}'
        ) from None


def _open_quote(line: str) -> int | None:
    """The column of the quote left open at the end of ``line`` (shell rules), or None."""
    quote, start, i = None, None, 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and quote != "'":
            i += 2
            continue
        if quote is None and ch in "'\"":
            quote, start = ch, i
        elif ch == quote:
            quote = None
        i += 1
    return start if quote is not None else None


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def _suggest_name(text: str) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in text) or "step"
    name = name if not name[0].isdigit() else f"f_{name}"
    return name if _is_name(name) else f"{name}_"


def _at_cell_line(cell: str, line: int, column: int, message: str) -> str:
    """``message`` and the cell line it is about with a caret (line 1 is the magic line)."""
    lines = ("%%tffunction\n" + cell).split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    column = min(max(column, 0), len(text))
    return f"%%tffunction: {message}\n  {text}\n  {' ' * column}^"


def _all_specs(value: Any) -> bool:
    """Whether every leaf of an evaluated ``--input-signature`` is a ``kx.TensorSpec``."""
    if isinstance(value, TensorSpec):
        return True
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_all_specs(v) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(_all_specs(v) for v in value.values())
    return False


def _spec_text(value: Any) -> str:
    """How the mini-language writes ``value``'s type (``float64[3]``), for a fix."""
    if isinstance(value, (np.ndarray, np.generic)):
        return TensorSpec(value.shape, value.dtype).describe()
    return "float32[None]"


def _from_user_code(tb: Any, stub: Any) -> Any:
    """``tb`` from its first frame in the user's code (not ours, not the call stub);
    ``tb`` itself when no frame is theirs (the error is the engine's to explain)."""
    entry = tb
    while entry is not None:
        code = entry.tb_frame.f_code
        if code is not stub and "/kernel_ext/" not in code.co_filename.replace("\\", "/"):
            return entry
        entry = entry.tb_next
    return tb


def _rerun_entry(number: int, fn: Any) -> str:
    """The history line of a re-run that kept the function: its traces *before* this run
    (calls in the cell may retrace it; ``%retrace_report`` lists those)."""
    before = units.plural(int(fn.stats.get("traces") or 0), "trace")
    return f"cell [{number}] re-run, unchanged: kept the function ({before} before this run)"


class _PlainHelp(MagicHelpFormatter):
    """``%%tffunction?`` in plain text: the usage line with the magic's own prefix (``%%``
    for a cell magic) instead of IPython's reStructuredText ``::`` block and one ``%``."""

    escape = "%"

    def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: Any = None) -> None:
        argparse.RawDescriptionHelpFormatter.add_usage(
            self, usage, actions, groups, f"usage: {self.escape}"
        )


class _PlainCellHelp(_PlainHelp):
    escape = "%%"


@magics_class
class TFFunctionMagics(Magics):
    """``%%tffunction`` and ``%retrace_report`` (``%load_ext kernel_ext`` registers them)."""

    def __init__(self, shell: Any, locator: CellLocator | None = None) -> None:
        super().__init__(shell)
        self.locator = locator or CellLocator(shell)
        self.registry = CellFunctionRegistry()
        self._monitors: dict[str, Any] = {}  # function key -> the monitor its cell shows
        self._cell_id: str | None = None

    @property
    def user_namespace(self) -> dict[str, Any]:
        """The shell's namespace (a registered magic always has its shell)."""
        return cast("InteractiveShell", self.shell).user_ns

    def pre_run_cell(self, info: Any = None) -> None:
        """Remember the running cell's id (JupyterLab sends one): it keys unnamed cells."""
        self._cell_id = getattr(info, "cell_id", None)

    # ------------------------------------------------------------------------------------------
    @magic_arguments()
    @argument(
        "name", nargs="?", default=None, help="make the whole cell one traced function called NAME"
    )
    @argument(
        "--input-signature",
        "-s",
        dest="input_signature",
        default=None,
        metavar="SPEC",
        help='fix the accepted signature: "x: float32[None, 3], n: int32[]", or a Python '
        "expression giving a list of kx.TensorSpec",
    )
    @argument(
        "--reduce-retracing",
        action="store_true",
        help="generalise dimensions that vary to None instead of retracing for each",
    )
    @argument(
        "--backend",
        default="auto",
        choices=["auto", "numpy", "numba", "cuda"],
        help="executor for the graphs (default: auto)",
    )
    @argument(
        "--jit-compile", action="store_true", help="compile whole graphs, loops included (Numba)"
    )
    @argument(
        "--fast-math",
        action="store_true",
        help="inline approximations of exp/log/tanh/sin/cos/pow in fused kernels "
        "(within documented ulp bounds of NumPy, not bitwise)",
    )
    @argument(
        "--no-autograph",
        action="store_true",
        help="trace Python control flow as written (no if/while/for conversion)",
    )
    @argument(
        "--strict",
        action="store_true",
        help="raise instead of retracing, with the full explanation as the message",
    )
    @argument(
        "--verify",
        action="store_true",
        help="check each new trace's first calls against the cell run eagerly "
        "(raises VerificationError on any difference)",
    )
    @argument("--no-widget", action="store_true", help="do not show the live monitor")
    @kwds(formatter_class=_PlainCellHelp)
    @cell_magic
    def tffunction(self, line: str, cell: str) -> Any:
        """Turn the functions a cell defines, or the cell itself, into traced functions.

        A cell that defines functions: each top-level def becomes a kx.function
        bound under its name; the cell's other statements run as usual (after a def, its
        name is the traced function):

            %%tffunction
            def dense(x, w):
                return np.tanh(x @ w)

            dense(np.ones((2, 3)), w)        # traced once, then cached

        A cell as a function (a cell without def, or with a NAME): the cell body is
        the function. Its inputs are the names it reads from the notebook (arrays become
        graph inputs, Python values are part of the signature), its outputs the names it
        assigns, written back to the notebook after it runs. Running the cell calls it;
        re-running it reuses the trace while the inputs keep their signature:

            %%tffunction step
            y = np.tanh(x @ w) * scale
            total = np.sum(y)

        Signatures: --input-signature fixes the one signature accepted (None for
        dimensions that vary, [*] for any rank, a Python value for a constant argument);
        it also accepts a Python expression evaluated in the notebook:

            %%tffunction --input-signature "x: float32[None, 3], n: int64[]"
            %%tffunction -s "[kx.TensorSpec([None, 3], np.float32)]"

        What a cell cannot hold (a UsageError names the construct and its line,
        before anything runs): code that would not do what it does in a plain cell, such as
        a top-level return/yield/await, an async def, or in a cell function
        global, del NAME and from m import *. An --input-signature that is
        neither the mini-language nor a Python list of kx.TensorSpec (-s "x, y"
        would give the arrays themselves) is refused with the fix.

        Re-running and editing: re-running a cell whose function is unchanged keeps the
        same function (its traces and history); an edited function is a new one, and its
        history says cell [12] edited. --strict makes any retrace an error that
        explains it; %retrace_report explains every retrace of the kernel.
        """
        args = _parse_line(self.tffunction, line)
        if args.name is not None and not _is_name(args.name):
            raise UsageError(
                f"%%tffunction: NAME {args.name!r} is not a Python name, and the cell function "
                "is bound under NAME in the notebook. Fix: use letters, digits and '_', not "
                f"starting with a digit, and not a keyword such as 'class' (e.g. "
                f"%%tffunction {_suggest_name(args.name)})"
            )
        if not cell.strip():
            raise UsageError(
                "%%tffunction: the cell is empty; write a def, or the code of "
                "the function, below the magic line"
            )
        # IPython leaves the magic's frames out of tracebacks: an error in the cell's code
        # shows the user's lines first, never this module's
        __tracebackhide__ = True
        number = cells.current_cell_number(self.shell)
        options = self._options(args)
        raw = f"%%tffunction {line}".rstrip() + "\n" + cell
        try:
            program = analyse_cell(cell)
        except SyntaxError as e:
            line_text = (e.text or "").strip()
            hint = (
                "\n(IPython syntax such as %magics and !commands cannot be used inside a "
                "%%tffunction cell: it is Python that is traced)"
                if line_text.startswith(("%", "!"))
                else ""
            )
            raise UsageError(
                f"%%tffunction: syntax error in the cell, line "
                f"{e.lineno}: {e.msg}\n  {line_text}{hint}"
            ) from None
        has_defs = any(isinstance(s, ast.FunctionDef) for s in program.tree.body)
        as_function = args.name is not None or not has_defs
        try:
            check_cell(program.tree, as_function)
        except CellError as e:
            raise UsageError(_at_cell_line(cell, e.line, e.column, str(e))) from None
        if not as_function:
            return self._def_cell(args, options, cell, raw, program, number)
        return self._cell_function(args, options, cell, raw, program, number)

    # -- options ------------------------------------------------------------------------------
    def _options(self, args: Any) -> dict:
        # argparse's ``choices`` let through only the backends kx.function knows; one it
        # cannot use here (Numba missing) is its ValueError, a UsageError in _make.
        return {
            "reduce_retracing": args.reduce_retracing,
            "backend": args.backend,
            "jit_compile": True if args.jit_compile else None,
            "fast_math": args.fast_math,
            "autograph": not args.no_autograph,
            "verify": args.verify,
        }

    def _signature(
        self, text: str | None, params: list[str], what: str
    ) -> tuple[list[Any] | None, list[str]]:
        """``(input_signature, parameter order)`` for ``params`` from ``--input-signature``."""
        if text is None:
            return None, params
        text = _unquote(text)
        try:
            entries = parse_signature(text)
        except SignatureSpecError as spec_error:
            value = self._evaluate_signature(text)
            if value is None:
                raise UsageError(f"%%tffunction --input-signature: {spec_error}") from None
            if not _all_specs(value):
                raise UsageError(self._not_a_signature(text, value, params, spec_error)) from None
            if len(value) > len(params):
                raise UsageError(
                    f"%%tffunction --input-signature: {len(value)} entries, but "
                    f"{what} takes {len(params)} ({', '.join(params)})"
                ) from None
            return list(value), params
        optional_names = [e.name for e in entries]
        if optional_names[0] is None:
            if len(entries) > len(params):
                raise UsageError(
                    f"%%tffunction --input-signature: {len(entries)} entries, but "
                    f"{what} takes {len(params)} ({', '.join(params) or 'none'})"
                )
            return [e.spec for e in entries], params
        names = cast("list[str]", optional_names)  # (the parser names every entry or none)
        unknown = [n for n in names if n not in params]
        if unknown:
            raise UsageError(
                f"%%tffunction --input-signature names {', '.join(unknown)}, but "
                f"{what} takes ({', '.join(params)})"
            )
        return [e.spec for e in entries], names + [p for p in params if p not in names]

    def _not_a_signature(
        self, text: str, value: list | tuple, params: list[str], spec_error: SignatureSpecError
    ) -> str:
        """Why an ``--input-signature`` that evaluates as Python is refused: as Python it
        gives values, not ``kx.TensorSpec`` s (``"x, y"`` gives the arrays themselves,
        ``"lst"`` a list of numbers), and as the mini-language it is malformed."""
        kinds = ", ".join(dict.fromkeys(type(v).__name__ for v in value)) or "nothing"
        example = ", ".join(f"{p}: {_spec_text(self.user_namespace.get(p))}" for p in params)
        return (
            f"%%tffunction --input-signature {text!r} is not a signature: as Python it "
            f"gives a {type(value).__name__} of {kinds}, not of kx.TensorSpec, and as the "
            f"signature mini-language it is malformed: {spec_error}\nFix: give each input "
            f'a type, e.g. -s "{example or "x: float32[None, 3]"}" (None for a '
            "dimension that varies), or a Python list of kx.TensorSpec"
        )

    def _evaluate_signature(self, text: str) -> list | tuple | None:
        try:
            value = eval(text, self.user_namespace)  # noqa: S307 - the user's own expression
        except Exception:  # noqa: BLE001 - then it was meant as the mini-language
            return None
        return value if isinstance(value, (list, tuple)) else None

    def _make(
        self, python_function: Any, signature: list | None, options: dict, name: str
    ) -> Function:
        try:
            return kx_function(python_function, input_signature=signature, name=name, **options)
        except (ValueError, TypeError, errors.KxError) as e:
            raise UsageError(f"%%tffunction: {e}") from None

    # -- a cell that defines functions ------------------------------------------------------------
    def _def_cell(
        self, args: Any, options: dict, cell: str, raw: str, program: Any, number: int
    ) -> Any:
        __tracebackhide__ = True
        ns = self.user_namespace
        filename = compile_cell_source(raw + "\n", number, self.shell, self.locator)
        body = program.tree.body
        value = None
        try:  # compile everything first: a statement Python refuses runs nothing
            compiled = [
                compile(ast.Expression(stmt.value), filename, "eval")
                if i == len(body) - 1 and isinstance(stmt, ast.Expr)
                else compile(ast.Module([stmt], type_ignores=[]), filename, "exec")
                for i, stmt in enumerate(body)
            ]
        except SyntaxError as e:
            raise UsageError(
                _at_cell_line(
                    cell, e.lineno or 1, (e.offset or 1) - 1, f"{e.msg} at line {e.lineno}"
                )
            ) from None
        for i, (stmt, code) in enumerate(zip(body, compiled)):
            if i == len(body) - 1 and isinstance(stmt, ast.Expr):
                value = eval(code, ns)
                break
            exec(code, ns)
            if isinstance(stmt, ast.FunctionDef):
                ns[stmt.name] = self._adopt(stmt, ns[stmt.name], args, options, number)
        return value

    def _adopt(
        self, node: ast.FunctionDef, value: Any, args: Any, options: dict, number: int
    ) -> Any:
        """The traced Function for a ``def`` just run: the previous one if unchanged."""
        if isinstance(value, Function):  # already @kx.function: keep it, note its cell
            if cells.cell_info(value) is None:
                cells.set_cell_info(
                    value,
                    CellFunctionInfo(value.__name__, number, "def", [f"cell [{number}] defined"]),
                )
            self._show(f"def:{node.name}", value, args)
            return value
        if not callable(value) or not hasattr(value, "__code__"):
            return value  # a decorator turned it into something else: leave it alone
        params = records.parameter_names_of(value)
        signature, _ = self._signature(args.input_signature, params, f"'{node.name}'")
        # The signature's value, not its text: "-s SPEC" changes when SPEC does.
        identity = (
            node_identity(node),
            repr(sorted(options.items())),
            repr(signature),
            defaults_identity(value),
        )
        key = f"def:{node.name}"
        fn, previous = self.registry.lookup(key, identity)
        if fn is not None:
            info = cells.cell_info(fn)
            if info is not None:
                info.history.append(_rerun_entry(number, fn))
        else:
            fn = self._make(value, signature, options, node.name)
            info = CellFunctionInfo(
                node.name, number, "def", self._history(previous, number, identity, key)
            )
            self.registry.store(key, identity, fn, info)
        cast("CellFunctionInfo", info).strict = args.strict  # (a stored function has its info)
        explain.configure(fn, strict=args.strict, magic_fixes=True)
        self._show(key, fn, args)
        return fn

    def _history(
        self, previous: CellFunctionInfo | None, number: int, identity: tuple, key: str
    ) -> list[str]:
        if previous is None:
            return [f"cell [{number}] defined"]
        old = self.registry.previous_function(key)
        traces = f", {units.plural(old.stats['traces'], 'trace')}" if old is not None else ""
        previous.replaced_by = number
        previous.history.append(f"replaced by an edit in cell [{number}]")
        was = f"the version from cell {previous.cell_text}{traces}"
        kept = [h for h in previous.history if not h.startswith("replaced by")][-6:]
        return [*kept, f"cell [{number}] edited (replaces {was})"]

    # -- a cell as a function ------------------------------------------------------------------
    def _cell_function(
        self, args: Any, options: dict, cell: str, raw: str, program: Any, number: int
    ) -> Any:
        ns = self.user_namespace
        inputs = [n for n in program.reads if n in ns and not is_static_global(ns[n])]
        if args.name is not None:
            key = f"name:{args.name}"
        elif self._cell_id:
            key = f"cell-id:{self._cell_id}"
        else:
            key = "source:" + hashlib.sha1(cell.encode()).hexdigest()
        signature, params = self._signature(args.input_signature, inputs, "the cell (inputs)")
        identity = (
            node_identity(program.tree),
            tuple(params),
            repr(sorted(options.items())),
            repr(signature),
        )
        fn, previous = self.registry.lookup(key, identity)
        if fn is not None:
            info = cells.cell_info(fn)
            assert info is not None
            info.history.append(_rerun_entry(number, fn))
            if args.name is not None:
                ns[args.name] = fn
        else:
            name = args.name or f"cell_{number}"
            try:
                python_function, params, outputs, has_value = cells.build_cell_function(
                    name,
                    cell,
                    ns,
                    number=number,
                    first=params[: len(signature or ())],
                    shell=self.shell,
                    locator=self.locator,
                )
            except SyntaxError as e:  # what Python refuses in a function body (a 'break')
                raise UsageError(
                    _at_cell_line(
                        cell,
                        e.lineno or 1,
                        max((e.offset or 1) - 5, 0),  # less the indent
                        f"{e.msg} at line {e.lineno} (the cell runs as the body of a function)",
                    )
                ) from None
            fn = self._make(python_function, signature, options, name)
            info = CellFunctionInfo(
                name,
                number,
                "cell",
                self._history(previous, number, identity, key),
                params=params,
                outputs=outputs,
                has_value=has_value,
            )
            self.registry.store(key, identity, fn, info, strong=args.name is None)
            if args.name is not None:
                ns[args.name] = fn
        info.strict = args.strict
        explain.configure(fn, strict=args.strict, magic_fixes=True)
        self._show(key, fn, args)
        # Call through a one-line stub compiled as this cell's line 1: the trace records its
        # call site as "cell [n], line 1" (not as IPython's internals).
        filename = compile_cell_source(raw + "\n", number, self.shell, self.locator)
        stub = compile("__kx_fn__(*__kx_args__)", filename, "eval")
        values = [ns[p] for p in info.params]
        __tracebackhide__ = True
        try:
            result = eval(stub, {"__kx_fn__": fn, "__kx_args__": values})
        except Exception as e:
            # The traceback starts in the cell's own code, not in the magic and the engine.
            # (the same exception again, so no `from`: its own cause and context stay)
            raise e.with_traceback(_from_user_code(e.__traceback__, stub))  # noqa: B904
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        for name, value in zip(info.outputs, results):
            ns[name] = value
        return results[-1] if info.has_value and results else None

    # -- widgets --------------------------------------------------------------------------------
    def close_monitors(self) -> None:
        """Close the monitors the magic's cells show (``%unload_ext``)."""
        monitors, self._monitors = list(self._monitors.values()), {}
        for m in monitors:
            m.close()

    def _show(self, key: str, fn: Function, args: Any) -> None:
        old = self._monitors.pop(key, None)
        if old is not None:
            # the earlier cell keeps its monitor, frozen at its last state (Run All shows
            # one per cell); only this cell's is live
            old.freeze()
        if args.no_widget:
            return
        m = Monitor(fn, locator=self.locator)
        self._monitors[key] = m
        from IPython.display import display

        display(m)

    # ------------------------------------------------------------------------------------------
    @magic_arguments()
    @argument("names", nargs="*", help="only these functions (by name or variable)")
    @argument(
        "--all",
        dest="include_all",
        action="store_true",
        help="also list first traces and functions never traced",
    )
    @argument(
        "--json",
        dest="as_json",
        action="store_true",
        help="return the report as JSON data (for tools)",
    )
    @kwds(formatter_class=_PlainHelp)
    @line_magic
    def retrace_report(self, line: str) -> Any:
        """Explain every retrace of every traced function in this kernel, costliest first.

        For each function: calls, traces, cache-hit rate, trace + compile time, and for each
        retrace: where it was called (cell and line), the closest earlier signature, each
        argument that differs (old → new), what it cost, and a copyable fix (an
        --input-signature / input_signature derived from the shapes seen,
        --reduce-retracing, passing an array instead of a Python number). Also lists
        captured globals whose value changed since a trace froze it:

            %retrace_report                 # every function that traced
            %retrace_report dense step      # only these
            %retrace_report --all           # first traces and untraced functions too
            data = %retrace_report --json   # a dict, for tools
        """
        args = parse_argstring(self.retrace_report, line)
        functions = registry.live_functions()
        if args.names:
            ns = self.user_namespace
            found = [n for n in args.names if any(f.name == n or ns.get(n) is f for f in functions)]
            missing = [n for n in args.names if n not in found]
            if missing:
                raise UsageError(
                    f"%retrace_report: no traced function named {', '.join(missing)} in this kernel"
                )
        reports = report_module.build_report(
            functions, self.locator, args.names, args.include_all, self.user_namespace
        )
        if args.as_json:
            return report_module.JSONReport(report_module.report_json(reports))
        return report_module.RetraceReport(reports)

    # ------------------------------------------------------------------------------------------
    @magic_arguments()
    @argument(
        "name",
        help="the variable (or variable.attribute) holding a kx.function, a "
        "ConcreteFunction, or an object whose attributes are kx.functions "
        "and kx.Variables",
    )
    @argument("path", help="where to write: a saved-model directory, or the .onnx / .py file")
    @argument(
        "--onnx",
        action="store_true",
        help="write an ONNX model (kernel_ext.onnx; needs the [onnx] extra)",
    )
    @argument(
        "--source", action="store_true", help="write one standalone .py file that needs only NumPy"
    )
    @kwds(formatter_class=_PlainHelp)
    @line_magic
    def tffunction_save(self, line: str) -> None:
        """Save a traced function (every signature it has traced) or a model object.

            %tffunction_save model saved/model          # a kx.saved_model directory
            %tffunction_save predict predict.onnx --onnx
            %tffunction_save predict predict.py --source

        ``kx.saved_model.load(path)`` gives the saved model back in any kernel, without the
        notebook that defined it.
        """
        args = parse_argstring(self.tffunction_save, line)
        if args.onnx and args.source:
            raise UsageError(
                "%tffunction_save: choose one of --onnx and --source (or neither, "
                "for a saved-model directory)"
            )
        ns = self.user_namespace
        head, *attrs = args.name.split(".")
        if head not in ns or not all(_is_name(a) for a in attrs):
            raise UsageError(
                f"%tffunction_save: no variable named {head!r} in this "
                "kernel; pass the name of a kx.function or of a model object "
                "(or model.attribute)"
            )
        obj = ns[head]
        for attr in attrs:
            if not hasattr(obj, attr):
                raise UsageError(f"%tffunction_save: {head} has no attribute {attr!r}")
            obj = getattr(obj, attr)
        fmt = "onnx" if args.onnx else "source" if args.source else "saved_model"
        try:
            exporting.export(obj, args.path, fmt)
        except exporting.ExportRefused as e:
            raise UsageError(f"%tffunction_save {args.name}: {e}") from None
        print(f"{args.name}: wrote {exporting.describe(fmt)} to {args.path}")
