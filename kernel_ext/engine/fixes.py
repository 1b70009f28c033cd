"""Suggested fixes for a retrace: copyable code, and the ``input_signature`` that avoids it.

:func:`suggest_fixes` turns a retrace's differences (:mod:`kernel_ext.engine.trace_records`) into
advice for people and :class:`Fix` es in code: an ``input_signature`` derived from every shape
the function has seen (:func:`derive_input_signature`, written out by :func:`signature_code`
and :func:`spec_text`), ``reduce_retracing``, an array instead of a Python number, a cast, the
same object. :func:`fix_for` is the one-line version the retracing warning shows.

Advice is generated from the recorded values, never a fixed example: a Python ``float``
argument is to be passed as ``np.float64(lr)`` (its own type), an ``int`` as ``np.int64(n)``.
Every fix is replayed against the recorded signatures before it is offered
(:func:`checked_fixes`) and says what it does (:attr:`Fix.effect`); :func:`fix_at_call_site`
rewrites an argument fix as the call the user wrote (``decay(w, np.float64(lr))``).
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from ..trace.types import Literal, TensorSpec, TraceType
from .trace_records import NUMERIC_LITERALS, ArgumentDiff, join_and, merge_column


@dataclass(frozen=True)
class Fix:
    """One way to avoid a retrace, as copyable code.

    ``code`` is Python (``@kx.function(...)`` options or the call's argument); ``magic`` the
    same fix for a ``%%tffunction`` cell (None when it has no magic form).
    """

    kind: str  # "input_signature", "reduce_retracing", "array_argument", "cast", ...
    code: str
    magic: str | None = None
    note: str = ""
    #: How many traces the recorded calls would have made with this fix (checked by
    #: :func:`traces_with`); None where it could not be checked.
    traces: int | None = None
    #: How many traces the recorded calls made without it (None: not replayed).
    before: int | None = None
    #: The parameter an argument fix changes at the call site, and its position; the
    #: expression to pass is ``wrap`` with ``{}`` standing for the argument's own text
    #: (``"np.float64({})"``, ``"{}.astype(np.float32)"``).
    argument: str = ""
    position: int | None = None
    wrap: str = ""

    @property
    def effect(self) -> str:
        """What the fix does to the recorded calls, replayed: ``"1 trace instead of 3"``;
        ``""`` where it was not replayed."""
        if self.traces is None or self.before is None:
            return ""
        return f"{plural(self.traces, 'trace')} instead of {self.before}"


def plural(count: int, noun: str) -> str:
    """``"1 trace"``, ``"3 traces"``: a count with its noun, in agreement."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def derive_input_signature(
    observed: Sequence[Sequence[TraceType]],
    varying: Iterable[int],
    merge: Callable[[int], Any] | None = None,
) -> tuple | None:
    """An ``input_signature`` that accepts every observed call without retracing.

    ``observed`` holds one tuple of trace types per trace (and the new call); ``varying`` the
    positions of the parameters that changed. Dimensions that took several values become
    ``None``; Python numbers that changed become 0-d arrays (``input_signature`` converts
    later Python numbers for you). The signature covers parameters up to the last varying one;
    ``None`` when one of them cannot be expressed (objects, structures, mixed dtypes).
    ``merge(i)``, where given, answers for column ``i`` without reading ``observed``
    (:meth:`TraceIndex.merged_column`).
    """
    varying = sorted(set(varying))
    if not varying or not observed:
        return None
    out: list[Any] = []
    for i in range(varying[-1] + 1):
        if merge is not None:
            spec = merge(i)
        else:
            spec = merge_column([types_[i] for types_ in observed if i < len(types_)])
        if spec is None:
            return None
        out.append(spec)
    return tuple(out)


def spec_text(names: Sequence[str], signature: Sequence[Any]) -> str:
    """``"x: float32[None, 3], n: int64[]"``: the ``--input-signature`` mini-language."""
    parts = []
    for name, spec in zip(names, signature):
        text = spec.describe() if isinstance(spec, TensorSpec) else repr(spec)
        parts.append(f"{name}: {text}")
    return ", ".join(parts)


def signature_code(signature: Sequence[Any]) -> str:
    """``[kx.TensorSpec([None, 3], np.float32), 2]``: Python code for an input_signature."""
    parts = []
    for spec in signature:
        if isinstance(spec, TensorSpec):
            shape = (
                "None"
                if spec.shape is None
                else "[" + ", ".join("None" if d is None else str(d) for d in spec.shape) + "]"
            )
            parts.append(f"kx.TensorSpec({shape}, np.{spec.dtype.name})")
        else:
            parts.append(repr(spec))
    return "[" + ", ".join(parts) + "]"


def suggest_fixes(
    function_name: str,
    names: Sequence[str],
    history: Sequence[Sequence[TraceType]],
    new: Sequence[TraceType],
    diffs: Sequence[ArgumentDiff],
    merge: Callable[[int], Any] | None = None,
) -> tuple[str, list[Fix], tuple | None]:
    """``(advice, fixes, derived input_signature)`` for a retrace with these differences.

    ``history`` is every earlier trace's types, ``new`` the call's. Fixes are ordered best
    first and are copyable: decorator options, a magic line, or the argument to pass.
    """
    kinds = {d.kind for d in diffs}
    top = [d.argument.split("[")[0].split(".")[0] for d in diffs]
    positions = [names.index(a) for a in dict.fromkeys(top) if a in names]
    signature = derive_input_signature([*history, new], positions, merge)
    fixes: list[Fix] = []

    def signature_fix(note: str = "") -> None:
        if signature is not None and not any(f.kind == "input_signature" for f in fixes):
            fixes.append(
                Fix(
                    "input_signature",
                    f"@kx.function(input_signature={signature_code(signature)})",
                    f'%%tffunction --input-signature "{spec_text(names, signature)}"',
                    note,
                )
            )

    advice: list[str] = []
    numeric_value = [
        d
        for d in diffs
        if d.kind in ("python_value", "python_to_array", "array_to_python")
        and _numeric_literal(d.old_type if d.kind != "array_to_python" else d.new_type)
    ]
    shaped = [d.argument for d in diffs if d.kind in ("shape", "rank")]
    if "dtype" in kinds:
        d = next(d for d in diffs if d.kind == "dtype")
        old = d.old_type.dtype.name if isinstance(d.old_type, TensorSpec) else "the old dtype"
        advice.append(
            f"'{d.argument}' arrived with another dtype ({d.old} before, {d.new} "
            "now); dtypes are part of the signature, so convert before calling."
        )
        fixes.append(
            Fix(
                "cast",
                f"{d.argument}.astype(np.{old})",
                note=f"cast {d.argument} at the call site, every call",
                **_argument_fields(d.argument, names, f"{{}}.astype(np.{old})"),
            )
        )
    if numeric_value:
        d = numeric_value[0]
        wrap = f"np.{_dtype_for(d)}({{}})"
        advice.append(
            f"'{d.argument}' is passed as a Python {_python_type_name(d)}, and "
            "Python values are part of the signature (each new value is a new "
            f"graph): pass it as {wrap.format(d.argument)} so the value becomes a "
            "graph input, or fix the signature so Python numbers are converted to "
            "arrays."
        )
        signature_fix("Python numbers are converted to arrays")
        fixes.append(
            Fix(
                "array_argument",
                f"{d.argument}={wrap.format(d.argument)}",
                note=f"pass {d.argument} as a NumPy {_dtype_for(d)}, at every call",
                **_argument_fields(d.argument, names, wrap),
            )
        )
    if shaped:
        advice.append(
            f"the shape of {join_and([repr(a) for a in dict.fromkeys(shaped)])} "
            "changed, and each shape is a new signature: declare the dimensions "
            "that vary as None (one graph for all sizes), or let the function "
            "generalise them itself."
        )
        signature_fix("dimensions seen with several sizes are None")
        fixes.append(
            Fix(
                "reduce_retracing",
                "@kx.function(reduce_retracing=True)",
                "%%tffunction --reduce-retracing",
                "widens varying dimensions to None after they change",
            )
        )
    if "function_object" in kinds:
        d = next(d for d in diffs if d.kind == "function_object")
        advice.append(
            f"'{d.argument}' is a new function object at each call (a lambda or def "
            "evaluated again, e.g. inside a loop or a re-run cell); functions are "
            "keyed by identity: define it once and pass the same object."
        )
        fixes.append(
            Fix(
                "same_object",
                f"{d.argument} = ...  # define once, outside the loop, then pass the same object",
                note="reuse one function object",
            )
        )
    if "object" in kinds:
        d = next(d for d in diffs if d.kind == "object")
        advice.append(
            f"'{d.argument}' is another object than before; objects without "
            "__tracing_type__ are keyed by identity (or equality when hashable): "
            "pass the same object, or give the class a __tracing_type__ that says "
            "which of its attributes matter."
        )
        fixes.append(
            Fix(
                "same_object",
                f"def __tracing_type__(self, context): ...  # on type({d.argument})",
                note="or pass the same object",
            )
        )
    other_values = [d for d in diffs if d.kind == "python_value" and d not in numeric_value]
    if other_values and not numeric_value:
        d = other_values[0]
        advice.append(
            f"'{d.argument}' is a Python value that changed; each value traces once "
            "and is then cached. That is fine for a few values (a mode flag); if it "
            "takes many, pass it as an array or make it a kx.Variable."
        )
    if not advice:
        args = ", ".join(dict.fromkeys(top))
        advice.append(f"the types of {args} changed; keep them stable between calls.")
        signature_fix()
    return " ".join(advice), checked_fixes(fixes, names, [*history, new], signature), signature


# -- checking a fix before offering it ------------------------------------------------------

#: Replaying more calls than this is not worth the time a view waits for: fixes stay unchecked.
MAX_REPLAY = 400


def checked_fixes(
    fixes: Sequence[Fix],
    names: Sequence[str],
    calls: Sequence[Sequence[TraceType]],
    signature: tuple | None,
) -> list[Fix]:
    """``fixes`` that would have removed at least one of the traces ``calls`` made, each
    with the number of traces it leaves (``Fix.traces``), best first.

    Each fix is *replayed*: the recorded calls' trace types go through the dispatch rules
    (TensorFlow's: an earlier trace serves a call whose types are subtypes of its own) with
    the fix applied — an ``input_signature`` conforming every call, ``reduce_retracing``
    widening dims as the engine does, an argument passed as an array or cast — so advice
    that would not help (``--reduce-retracing`` when a Python number changes) is never shown.
    """
    if len(calls) > MAX_REPLAY:
        return list(fixes)
    now = len(calls)
    out = []
    for fix in fixes:
        left = traces_with(fix, names, calls, signature)
        if left is None:
            out.append(fix)
        elif left < now or (fix.kind == "reduce_retracing" and _widens_for_later(calls)):
            # reduce_retracing still pays the retrace that taught it a dim varies; what it
            # buys is the next size (checked: one more call with other sizes reuses it)
            out.append(replace(fix, traces=left, before=now))
    # the fix that leaves the fewest traces first (stable: the advice's order among equals)
    return sorted(out, key=lambda f: now if f.traces is None else f.traces)


def traces_with(
    fix: Fix, names: Sequence[str], calls: Sequence[Sequence[TraceType]], signature: tuple | None
) -> int | None:
    """How many traces ``calls`` make with ``fix`` applied; None: not checkable here."""
    rows = [tuple(c) for c in calls]
    if fix.kind == "input_signature":
        if signature is None:
            return None
        conformed = []
        for c in rows:
            head = [_conform(t, spec) for t, spec in zip(c, signature)]
            if any(h is None for h in head):
                return None  # a recorded call the signature would refuse: not a fix
            conformed.append(tuple(head) + c[len(signature) :])
        return replay(conformed)
    if fix.kind == "reduce_retracing":
        return replay(rows, reduce_retracing=True)
    arg = fix.argument or fix.code.split("=")[0].split(".")[0].strip()
    if fix.kind in ("array_argument", "cast") and arg in names:
        i = names.index(arg)
        specs = [c[i] for c in rows if isinstance(c[i], TensorSpec)]
        target = (
            cast("TensorSpec | None", next((t for t in specs), None))
            if fix.kind == "cast"
            else None
        )
        # ``np.float64({})``: the array the fix passes, of the argument's own type
        wrap = fix.wrap or fix.code.split("=", 1)[-1]
        dtype = wrap.split("np.", 1)[-1].split("(", 1)[0] if "np." in wrap else "int64"

        def changed(t: TraceType) -> TraceType:
            if fix.kind == "cast" and isinstance(t, TensorSpec) and target is not None:
                return TensorSpec(t.shape, target.dtype)
            if (
                fix.kind == "array_argument"
                and isinstance(t, Literal)
                and isinstance(t.value, NUMERIC_LITERALS)
            ):
                return TensorSpec((), np.dtype(dtype))
            return t

        return replay([c[:i] + (changed(c[i]),) + c[i + 1 :] for c in rows])
    return None


def _widens_for_later(calls: Sequence[Sequence[TraceType]]) -> bool:
    """Would ``reduce_retracing`` serve one more call like the last, with every dimension
    that changed taking yet another size, without tracing again?"""
    rows = [tuple(c) for c in calls]
    if len(rows) < 2:
        return False
    last, before = rows[-1], rows[-2]
    later: list[TraceType] = []
    for new, old in zip(last, before):
        if (
            isinstance(new, TensorSpec)
            and isinstance(old, TensorSpec)
            and new.shape is not None
            and old.shape is not None
            and len(new.shape) == len(old.shape)
        ):
            shape = tuple(
                d if d == o or d is None else d + 1 + max(d, o or 0)
                for d, o in zip(new.shape, old.shape)
            )
            later.append(TensorSpec(shape, new.dtype))
        else:
            later.append(new)
    if tuple(later) == last:
        return False  # no dimension changed: there is no "next size" to serve
    grown = [*rows, tuple(later)]
    return replay(grown, reduce_retracing=True) == replay(rows, reduce_retracing=True)


def replay(calls: Sequence[tuple], reduce_retracing: bool = False) -> int:
    """The number of traces the calls make in order, under the engine's dispatch rules."""
    traces: list[tuple] = []
    for c in calls:
        if any(len(t) == len(c) and all(a.is_subtype_of(b) for a, b in zip(c, t)) for t in traces):
            continue
        new = c
        if reduce_retracing:  # as Function._generalize: widen against the latest that merges
            for old in reversed(traces):
                merged = [a.most_specific_common_supertype([b]) for a, b in zip(c, old)]
                if len(old) == len(c) and all(m is not None for m in merged):
                    new = tuple(merged)
                    break
        traces.append(new)
    return len(traces)


def _conform(t: TraceType, spec: Any) -> TraceType | None:
    """What ``input_signature`` makes of an argument of type ``t`` (None: refused)."""
    if not isinstance(spec, TensorSpec):
        return t if t == spec else None
    if isinstance(t, Literal) and isinstance(t.value, NUMERIC_LITERALS):
        converted = np.asarray(t.value)
        ok = np.can_cast(converted.dtype, spec.dtype, casting="same_kind") and (
            spec.shape is None or spec.shape == ()
        )
        return spec if ok else None
    return spec if isinstance(t, TensorSpec) and t.is_subtype_of(spec) else None


def _numeric_literal(t: Any) -> bool:
    return isinstance(t, Literal) and isinstance(t.value, NUMERIC_LITERALS)


def _argument_fields(argument: str, names: Sequence[str], wrap: str) -> dict[str, Any]:
    """The :class:`Fix` fields that let :func:`fix_at_call_site` rewrite the call."""
    top = argument.split("[")[0].split(".")[0]
    if top != argument or top not in names:
        return {}  # a part of a structure: no single expression at the call site to wrap
    return {"argument": top, "position": list(names).index(top), "wrap": wrap}


def _python_type_name(d: ArgumentDiff) -> str:
    """``"float"``, ``"int"``: the Python type of the number the diff recorded."""
    for t in (d.new_type, d.old_type):
        if isinstance(t, Literal):
            return type(t.value).__name__
    return "number"


def _dtype_for(d: ArgumentDiff) -> str:
    for t in (d.new_type, d.old_type):
        if isinstance(t, TensorSpec):
            return t.dtype.name
    value = d.new_type.value if isinstance(d.new_type, Literal) else d.old_type.value
    return np.asarray(value).dtype.name


def fix_for(function_name: str, diffs: Sequence[ArgumentDiff]) -> str:
    """A short suggestion in words (the retracing warning's "Fix:")."""
    kinds = {d.kind for d in diffs}
    args = sorted({d.argument.split("[")[0].split(".")[0] for d in diffs})
    if kinds & {"python_value", "python_to_array", "array_to_python"}:
        d = next(
            d for d in diffs if d.kind in ("python_value", "python_to_array", "array_to_python")
        )
        arg, dtype = d.argument, _dtype_for(d)
        return (
            f"pass {arg} as a NumPy value of its own type, np.{dtype}({arg}), so that its "
            "value is a graph input instead of part of the signature, or give the function "
            f"an input_signature with a 0-d kx.TensorSpec(shape=[], dtype=np.{dtype}) for "
            f"{arg}"
        )
    if kinds & {"shape", "rank"}:
        return (
            f"use kx.function({function_name}, reduce_retracing=True), or an "
            f"input_signature with None for the dimensions of {', '.join(args)} that vary"
        )
    if "dtype" in kinds:
        return f"convert {', '.join(args)} to one dtype before calling (x.astype(...))"
    if kinds & {"object", "function_object"}:
        return (
            "pass the same object each call (a new function/lambda or object per call "
            "always retraces), or give its class a __tracing_type__"
        )
    return f"keep the types of {', '.join(args)} stable between calls"


# -- a fix as the call the user wrote ----------------------------------------------------------


def fix_at_call_site(fix: Fix, function_name: str, raw_call_site: str) -> Fix:
    """``fix`` with its code rewritten as the call at ``raw_call_site`` (``"file:line"``) with
    the fix applied: ``decay(w, np.float64(lr))`` for the call ``decay(w, lr)``.

    The source line comes from ``linecache`` (which holds notebook cells too); the fix is
    returned as it was where the line cannot be read, does not parse on its own, or holds no
    call of ``function_name`` passing that argument.
    """
    if not fix.wrap or fix.position is None or not raw_call_site:
        return fix
    filename, _, line = raw_call_site.rpartition(":")
    if not line.isdigit():
        return fix
    rewritten = rewrite_call(linecache.getline(filename, int(line)), function_name, fix)
    return fix if rewritten is None else replace(fix, code=rewritten)


def rewrite_call(source: str, function_name: str, fix: Fix) -> str | None:
    """The call of ``function_name`` in the one-line ``source`` (else its only call that
    could be it: ``f(x, n)`` where ``f = kx.function(step)``), with the argument ``fix``
    changes (by keyword, else by position) wrapped as ``fix.wrap`` says; None where there
    is no such call."""
    text = source.strip()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    calls = [
        (node, _fixed_argument(node, fix)) for node in ast.walk(tree) if isinstance(node, ast.Call)
    ]
    fixable = [(node, target) for node, target in calls if target is not None]
    named = [c for c in fixable if _callee(c[0].func) == function_name]
    others = [c for c in fixable if not _is_library_call(c[0].func)]
    chosen = named[:1] or (others if len(others) == 1 else [])
    for node, target in chosen:
        call = ast.get_source_segment(text, node)
        argument = ast.get_source_segment(text, target)
        if call is None or argument is None:
            return None
        # ast's offsets count UTF-8 bytes
        raw = call.encode()
        start = target.col_offset - node.col_offset
        end = start + len(argument.encode())
        return raw[:start].decode() + fix.wrap.format(argument) + raw[end:].decode()
    return None


def _fixed_argument(call: ast.Call, fix: Fix) -> ast.expr | None:
    """The expression ``call`` passes for the parameter ``fix`` changes, or None."""
    target = next((k.value for k in call.keywords if k.arg == fix.argument), None)
    if target is not None or fix.position is None or len(call.args) <= fix.position:
        return target
    if any(isinstance(a, ast.Starred) for a in call.args[: fix.position + 1]):
        return None  # f(*args, lr): the position is not known from the text
    return call.args[fix.position]


#: Module names whose calls are never the traced function (``np.sum(x)``).
_LIBRARY_MODULES = frozenset({"np", "numpy", "math", "kx", "kernel_ext"})


def _is_library_call(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in _LIBRARY_MODULES
    )


def _callee(func: ast.expr) -> str | None:
    """``decay`` for ``decay(...)`` and ``self.decay(...)``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None
