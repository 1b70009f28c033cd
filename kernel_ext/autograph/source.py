"""Finding the source of exactly one function: by its code object, never by its name alone.

AutoGraph rewrites a function's *source*, so the source must be that function's. A name and a
first line are not enough: ``fs = [lambda x: x + 1, lambda x: x * 100]`` puts two lambdas with
the same name and parameters on one line, ``g = f(lambda x: x * 2); h = f(lambda x: x - 7)``
too, and a pseudo file name (``<no-source>``, a reused ``<string>``) can hold in ``linecache``
the text of another definition that happened to be compiled under the same name. Converting
the wrong text is a silent wrong result, so :func:`find_definition` decides in three steps:

1. **Candidates**: every ``def`` of the code's name, or every ``lambda`` with its parameters,
   in the source lines :func:`source_lines` returns, that starts on the code's first line
   (``co_firstlineno``: the first decorator's line for a decorated ``def``).
2. **Positions**: CPython records for each instruction the line *and column* span of the
   expression it came from (``code.co_positions()``). A function's own instructions lie in its
   body; a nested function's body holds none of the enclosing function's (the enclosing one
   only *makes* it: a ``MAKE_FUNCTION`` spanning the whole ``lambda``, keyword included). So a
   candidate stays only if its body holds every position, and of nested survivors the
   innermost is the one (the enclosing body holds the nested body's positions too).
3. **Verification**: the chosen node is compiled alone, inside a wrapper that makes the code's
   free variables closure cells again, and must give the same bytecode, constants and names
   as ``fn.__code__``. Stale or foreign source fails here. (pytest rewrites the ``assert``
   statements of test modules into code no source compiles to: when a code object holds
   pytest's helpers, its ``assert`` lines are left out of the comparison.)

Anything left ambiguous or unverified raises :class:`Unconvertible` (the function then runs as
written, with a warning): a function run unconverted is slower or refuses traced control
flow with a clear error; a function converted from another function's text is wrong.
"""

from __future__ import annotations
import __future__

import ast
import copy
import dis
import inspect
import io
import linecache
import re
import textwrap
import tokenize
import types
from collections.abc import Sequence
from typing import cast

from .transformer import Located, Unconvertible

__all__ = ["find_definition", "same_code", "source_lines"]

# A line that can start a definition (inspect.findsource's test).
_DEF_LINE = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")

# The ``from __future__`` flags a code object carries: its source must compile under them.
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_Definition = _Function | ast.Lambda  # what a function's source may define it by
_Span = tuple[int, int | None, int, int | None]  # line, column, end line, end column


def source_lines(code: types.CodeType) -> tuple[list[str], int]:
    """The source lines of ``code``'s definition and the number of the first one.

    ``inspect.getsourcelines`` answers the same, but its first call in a process maps every
    loaded module to its file (``realpath`` of each: tens of milliseconds, paid by the first
    trace) and tokenizes to find the end of the block. Here the block ends at the first
    statement indented no deeper than its first line; the text is accepted only if it
    parses, and anything unusual (a continuation line at the margin, a string spanning the
    margin, a file only a loader can read) takes inspect's way. The lines are only where the
    definition should be: :func:`find_definition` checks that they are.
    """
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    lnum = code.co_firstlineno - 1
    if not lines or not 0 <= lnum < len(lines):
        return inspect.getsourcelines(code)
    while lnum > 0 and not _DEF_LINE.match(lines[lnum]):
        lnum -= 1
    head = lines[lnum]
    indent = len(head) - len(head.lstrip())
    start = lnum
    while start + 1 < len(lines) and lines[start].lstrip().startswith("@"):
        start += 1  # decorators: the block proper begins at the ``def``
    end = start + 1
    for i in range(start + 1, len(lines)):
        text = lines[i].strip()
        if not text or text.startswith("#"):
            continue
        if len(lines[i]) - len(lines[i].lstrip()) <= indent:
            break
        end = i + 1
    block = lines[lnum:end]
    try:
        ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return inspect.getsourcelines(code)
    return block, lnum + 1


def find_definition(fn: types.FunctionType) -> ast.FunctionDef:
    """The ``def`` of ``fn`` (a lambda becomes an equivalent ``def``), with the absolute line
    numbers of its source; :class:`Unconvertible` when the source is missing, ambiguous or
    not ``fn``'s (see the module docstring)."""
    code = fn.__code__
    try:
        lines, first = source_lines(code)  # not __wrapped__
    except (OSError, TypeError) as e:
        raise Unconvertible(f"its source is not available ({e})") from None
    text = "".join(lines)
    is_lambda = code.co_name == "<lambda>"
    candidates = _lambdas(text, first, code) if is_lambda else _defs(text, first, code)
    if not candidates:
        raise Unconvertible(
            f"its source is not available (line {code.co_firstlineno} of "
            f"{code.co_filename!r} holds no definition of {_what(code)})"
        )
    positions = _positions(code)
    placed = _innermost([c for c in candidates if _holds(_body_span(c), positions)])
    rewritten = _rewritten_asserts(code)
    verified = [
        c
        for c in placed
        if same_code(_compile_alone(c, code), code, _assert_lines(c) if rewritten else ())
    ]
    if not verified:
        raise Unconvertible(
            "its source is not available (the text at line "
            f"{code.co_firstlineno} of {code.co_filename!r} does not compile to this "
            "function's code: the file changed since, or the name holds another "
            "definition)"
        )
    if len(verified) > 1:
        raise Unconvertible(
            f"its source is ambiguous ({len(verified)} definitions of "
            f"{_what(code)} on line {code.co_firstlineno} compile alike and "
            "its code does not say which one it is)"
        )
    node = verified[0]
    if isinstance(node, ast.Lambda):
        return _lambda_as_def(node)
    if isinstance(node, ast.AsyncFunctionDef):
        raise Unconvertible("it is a generator or coroutine")
    return node


def _what(code: types.CodeType) -> str:
    return "a lambda" if code.co_name == "<lambda>" else f"'{code.co_name}'"


def _start_line(node: _Definition) -> int:
    """The line a definition's code object calls its first: its first decorator's."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


# -- candidates ----------------------------------------------------------------------------------


def _parse_block(text: str, first: int) -> ast.Module:
    """``text`` parsed with the absolute lines *and columns* it has in its file (an indented
    block is parsed inside ``if 1:`` rather than dedented, so columns stay the file's)."""
    if text[:1] in (" ", "\t"):
        tree = ast.parse("if 1:\n" + text)
        ast.increment_lineno(tree, first - 2)
    else:
        tree = ast.parse(text)
        ast.increment_lineno(tree, first - 1)
    return tree


def _defs(text: str, first: int, code: types.CodeType) -> list[_Function]:
    try:
        tree = _parse_block(text, first)
    except SyntaxError:
        return []
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, _Function)
        and n.name == code.co_name
        and _start_line(n) == code.co_firstlineno
    ]


def _lambdas(text: str, first: int, code: types.CodeType) -> list[ast.Lambda]:
    """Every lambda with ``code``'s parameters starting on its first line: the longest
    expression that parses from each ``lambda`` keyword of the text (the text may begin or
    end inside a statement, so it cannot be parsed whole)."""
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    if code.co_flags & inspect.CO_VARARGS:
        params.append(code.co_varnames[len(params)])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append(code.co_varnames[len(params)])
    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    found: list[ast.Lambda] = []
    for match in re.finditer(r"(?<!\w)lambda(?!\w)", text):
        pos = match.start()
        row = max(i for i in range(len(line_starts)) if line_starts[i] <= pos)
        if first + row != code.co_firstlineno:
            continue
        column = len(text[line_starts[row] : pos].encode())  # ast columns count UTF-8 bytes
        node = _longest_lambda(text[pos:], first + row, column)
        if node is not None and _lambda_params(node) == params:
            found.append(node)
    return found


def _longest_lambda(text: str, line: int, column: int) -> ast.Lambda | None:
    """The longest prefix of ``text`` that parses as a lambda, placed at ``line``/``column``.

    Prefixes end at token boundaries of the logical line the lambda starts (it cannot reach
    past that line's end); each is parsed in parentheses (so it may span lines and end in a
    comment), whose opening one shifts the first line's columns by one, taken back here."""
    for end in _token_ends(text):
        try:
            expr = ast.parse("(" + text[:end] + "\n)", mode="eval").body
        except SyntaxError:
            continue
        if not isinstance(expr, ast.Lambda):
            continue  # a tuple or a call that starts with this lambda: shorter
        for n in ast.walk(expr):
            if hasattr(n, "col_offset"):
                placed = cast("Located", n)
                if placed.lineno == 1:
                    placed.col_offset += column - 1
                if placed.end_lineno == 1:
                    placed.end_col_offset += column - 1
        ast.increment_lineno(expr, line - 1)
        return expr
    return None


def _token_ends(text: str) -> list[int]:
    """Offsets in ``text`` where its tokens end, up to its first logical line's end, longest
    first (every offset, if the text does not tokenize)."""
    starts = [0]
    for row in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(row))
    ends: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                break
            ends.add(starts[tok.end[0] - 1] + tok.end[1])
    except (tokenize.TokenError, IndentationError, SyntaxError):
        if not ends:
            return list(range(len(text), 0, -1))
    return sorted(ends, reverse=True)


def _lambda_params(node: ast.Lambda) -> list[str]:
    a = node.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return names + [x.arg for x in (a.vararg, a.kwarg) if x is not None]


# -- positions -----------------------------------------------------------------------------------


def _positions(code: types.CodeType) -> list[_Span]:
    """The spans of ``code``'s instructions that come from the source. Prologue instructions
    (``RESUME``, cell set-up) and some returns carry no span or an empty one at column 0;
    without column information (``python -X no_debug_ranges``) only the lines are known."""
    out = []
    for line, end_line, col, end_col in code.co_positions():
        if line is None or end_line is None:
            continue
        if col is not None and end_col is not None and (line, col) == (end_line, end_col):
            continue
        out.append((line, col, end_line, end_col))
    return out


def _body_span(node: _Definition) -> _Span:
    if isinstance(node, ast.Lambda):
        b = node.body
        return b.lineno, b.col_offset, b.end_lineno or b.lineno, b.end_col_offset
    body = node.body
    return (
        body[0].lineno,
        body[0].col_offset,
        body[-1].end_lineno or body[-1].lineno,
        body[-1].end_col_offset,
    )


def _holds(span: _Span, positions: list[_Span]) -> bool:
    line, col, end_line, end_col = span
    for p_line, p_col, p_end_line, p_end_col in positions:
        if p_col is None or p_end_col is None or col is None or end_col is None:
            if not line <= p_line <= p_end_line <= end_line:
                return False
        elif not (line, col) <= (p_line, p_col) <= (p_end_line, p_end_col) <= (end_line, end_col):
            return False
    return True


def _innermost(nodes: list[_Definition]) -> list[_Definition]:
    """Drop every node whose body holds another node of the list: a function's positions
    lie in the body of each function enclosing it, so the innermost holder is the one."""

    def inside(a: _Definition, b: _Definition) -> bool:
        return a is not b and _holds(_body_span(b), [_whole_span(a)])

    return [n for n in nodes if not any(inside(m, n) for m in nodes)]


def _whole_span(node: _Definition) -> _Span:
    return (
        _start_line(node),
        node.col_offset,
        node.end_lineno or node.lineno,
        node.end_col_offset,
    )


# -- verification --------------------------------------------------------------------------------

_CHECKED_NAME = "__kx_source_checked__"


def _compile_alone(node: _Definition, code: types.CodeType) -> types.CodeType | None:
    """``node`` compiled by itself as ``code`` was: inside a function whose parameters are
    ``code``'s free variables (so they stay closure cells, not globals), under the same
    ``from __future__`` flags. None if it does not compile."""
    node = copy.deepcopy(node)
    if isinstance(node, ast.Lambda):
        inner: ast.stmt = ast.Return(value=node)
    else:
        # Under its own name the ``def`` would make that name a local of the wrapper, and a
        # recursive call a closure read (a global read in the module).
        node.name = _CHECKED_NAME
        node.decorator_list = []
        inner = node
    wrapper = ast.FunctionDef(
        name="__kx_source_check__",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=a) for a in code.co_freevars],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[inner],
        decorator_list=[],
        returns=None,
        type_params=[],  # type: ignore[call-arg]  # (Python 3.12's field; mypy checks 3.11)
    )
    ast.copy_location(wrapper, node)
    module = ast.fix_missing_locations(ast.Module(body=[wrapper], type_ignores=[]))
    try:
        compiled = compile(
            module, code.co_filename, "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True
        )
    except (SyntaxError, ValueError):
        return None
    outer = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    # Defaults (a lambda among them) are compiled before the function: its code comes last.
    made = [c for c in outer.co_consts if isinstance(c, types.CodeType)]
    return made[-1] if made else None


def _rewritten_asserts(code: types.CodeType) -> bool:
    """Whether pytest rewrote the ``assert`` statements of ``code`` (in a test module): its
    code then holds pytest's helpers (``@pytest_ar``, ``@py_assert1``), which no source
    compiles to, and the ``assert`` lines are left out of the comparison."""
    names = code.co_names + code.co_varnames
    if any(n.startswith(("@pytest_ar", "@py_")) for n in names):
        return True
    return any(_rewritten_asserts(c) for c in code.co_consts if isinstance(c, types.CodeType))


def _assert_lines(node: ast.AST) -> list[tuple[int, int]]:
    return [
        (n.lineno, n.end_lineno or n.lineno) for n in ast.walk(node) if isinstance(n, ast.Assert)
    ]


def same_code(
    a: types.CodeType | None, b: types.CodeType, skip: Sequence[tuple[int, int]] = ()
) -> bool:
    """Whether two code objects do the same: the same instructions on the same names,
    constants (nested code compared alike) and parameters. Line numbers, columns, file
    names and what the compiler chose from the *enclosing* module may differ: CPython 3.11
    calls ``np.eye(3)`` through ``LOAD_ATTR`` when ``np`` was imported in the module and
    through ``LOAD_METHOD`` otherwise, with other cache sizes and so other jump offsets.
    Instructions on the line ranges ``skip`` (pytest's rewritten asserts) are left out."""
    if a is None:
        return False
    params = (
        a.co_argcount
        + a.co_kwonlyargcount
        + bool(a.co_flags & inspect.CO_VARARGS)
        + bool(a.co_flags & inspect.CO_VARKEYWORDS)
    )
    if (
        a.co_freevars != b.co_freevars
        or a.co_cellvars != b.co_cellvars
        or a.co_varnames[:params] != b.co_varnames[:params]
        or a.co_argcount != b.co_argcount
        or a.co_kwonlyargcount != b.co_kwonlyargcount
        or a.co_posonlyargcount != b.co_posonlyargcount
        or a.co_flags & _KIND_FLAGS != b.co_flags & _KIND_FLAGS
    ):
        return False
    ours, theirs = _instructions(a, skip), _instructions(b, skip)
    return len(ours) == len(theirs) and all(
        x[0] == y[0] and _same_constant(x[1], y[1], skip) for x, y in zip(ours, theirs)
    )


# Flags that change what a code object is (not where it was compiled: CO_NESTED).
_KIND_FLAGS = (
    inspect.CO_VARARGS
    | inspect.CO_VARKEYWORDS
    | inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
)
# Instructions that do the same, chosen by context outside the function (see same_code).
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}


def _instructions(
    code: types.CodeType, skip: Sequence[tuple[int, int]] = ()
) -> list[tuple[str, object]]:
    """``(operation, argument)`` per instruction not on a ``skip`` line range: names and
    constants by value, jumps by the index of their target among those kept (offsets
    depend on inline cache sizes; a target skipped counts as the next one kept)."""

    def skipped(ins: dis.Instruction) -> bool:
        line, end = ins.positions.lineno, ins.positions.end_lineno  # type: ignore[union-attr]
        return (
            line is not None
            and end is not None
            and any(first <= line and end <= last for first, last in skip)
        )

    # PUSH_NULL before a call of a non-method is the same as LOAD_GLOBAL's "push NULL" bit,
    # which the compiler uses instead in some contexts (``kx.grad(f)(x)`` in a module
    # function versus the same text compiled alone): neither is an operation of its own.
    # EXTENDED_ARG only widens the next instruction's argument: a jump whose distance needs
    # two bytes in the module (its inline caches or its surroundings are larger there) needs
    # one alone, so it is no operation of its own either.
    found = [(ins, skipped(ins) or ins.opname in _PREFIXES) for ins in dis.get_instructions(code)]
    index: dict[int, int] = {}
    kept = 0
    for ins, left_out in found:
        index[ins.offset] = kept
        kept += not left_out
    out: list[tuple[str, object]] = []
    for ins, left_out in found:
        if left_out:
            continue
        if ins.opcode in _JUMPS:
            arg: object = ("jump", index.get(ins.argval))
        elif ins.opcode in dis.hasconst or ins.opname == "KW_NAMES":
            arg = ins.argval
        else:
            arg = ins.argval if isinstance(ins.argval, str) else ins.arg
        out.append((_SAME_OP.get(ins.opname, ins.opname), arg))
    return out


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
#: Instructions that are no operation of their own (see _instructions).
_PREFIXES = frozenset({"PUSH_NULL", "EXTENDED_ARG", "CACHE"})


def _same_constant(x: object, y: object, skip: Sequence[tuple[int, int]] = ()) -> bool:
    if isinstance(x, types.CodeType):
        return isinstance(y, types.CodeType) and same_code(x, y, skip)
    if type(x) is not type(y):
        return False
    if isinstance(x, tuple):
        other = cast("tuple", y)  # (of x's own type)
        return len(x) == len(other) and all(_same_constant(p, q) for p, q in zip(x, other))
    if isinstance(x, frozenset):
        return x == y
    return repr(x) == repr(y)  # -0.0 is not 0.0, and nan is nan


def _lambda_as_def(node: ast.Lambda) -> ast.FunctionDef:
    fn_node = ast.FunctionDef(
        name="__kx_lambda__",
        args=node.args,
        body=[ast.Return(value=node.body)],
        decorator_list=[],
        returns=None,
        type_params=[],  # type: ignore[call-arg]  # (Python 3.12's field; mypy checks 3.11)
    )
    ast.copy_location(fn_node.body[0], node.body)
    return ast.fix_missing_locations(ast.copy_location(fn_node, node))
