"""Generated index-loop programs for the loop fuzzer (``test_loop_fuzzer.py``).

:func:`make_loop_program` writes, from a seed, the body of a function over a square float64
array ``A``, a vector ``v`` and an int64 array ``K``: nested ``for`` loops over constant,
triangular (``range(i)``, ``range(i, n)``), reversed and strided ranges whose bodies read and
write elements and slices of the arguments and of buffers the function makes (``np.zeros``,
``np.empty`` filled by a loop), loop over a traced array's rows, run ``while`` loops with data
tests, carry Python-number scalars, reduce rows and columns, ``break``
and ``continue`` (on Python and on traced tests) and branch on traced values. Every operation
is one whose bits NumPy fixes (elementwise IEEE arithmetic, exact integer arithmetic, max/min,
integer sums and dot products, Python's sequential ``sum``), so every executor must
reproduce them exactly. Slices whose bounds are loop indices (``A[i, :i]``, ``v[-(i):]``,
``K[i, i::-1]``) have lengths known only at run time inside a graph loop.

:func:`make_wide_program` writes row loops over a few long rows: whole-row updates, row
reductions and carried scalars, for sizes around the element thresholds (2**15, 2**18).

:class:`LoopBatch` joins programs into one function (one trace, one compile): its source is a
real file, so AutoGraph reads and converts it as it would a user's module.
"""

from __future__ import annotations

import importlib.util
import itertools
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_DIR = Path(tempfile.mkdtemp(prefix="kx_loop_programs_"))
_COUNTER = itertools.count()


@dataclass
class LoopProgram:
    """One generated program: its statements (names prefixed per program), inputs, outputs."""

    seed: int
    n: int
    lines: list[str]
    params: list[str]
    inputs: list[np.ndarray]
    outputs: list[str]
    features: set[str] = field(default_factory=set)

    def source(self, name: str = "program") -> str:
        body = "\n".join("    " + line for line in self.lines)
        return (
            f"def {name}({', '.join(self.params)}):\n{body}\n"
            f"    return ({', '.join(self.outputs)},)\n"
        )


class _Writer:
    """Statements of one program, with the names it may use at each point."""

    def __init__(self, rng: np.random.Generator, prefix: str, n: int, max_depth: int) -> None:
        self.rng, self.p, self.n, self.max_depth = rng, prefix, n, max_depth
        self.lines: list[str] = []
        self.features: set[str] = set()
        self.buffers: list[str] = []  # 1-D float buffers made in the function, all written

    def name(self, stem: str) -> str:
        return f"{self.p}{stem}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def pick(self, options: list[Any]) -> Any:
        return options[int(self.rng.integers(len(options)))]

    # -- indices ------------------------------------------------------------------------------
    def index(self, idx: list[str]) -> str:
        """A valid row/column index from the loop indices in scope (or a constant)."""
        n = self.n
        if not idx:
            return str(int(self.rng.integers(n)))
        i = self.pick(idx)
        return self.pick([i, i, i, f"{self.name('n')} - 1 - {i}", f"({i} + 1) % {self.name('n')}"])

    def header(self, idx: list[str], var: str) -> str:
        n = self.name("n")
        options = [f"range({n})", f"range(1, {n})", f"range({n} - 1, -1, -1)", f"range(0, {n}, 2)"]
        if idx:
            i = self.pick(idx)
            options += [
                f"range({i})",
                f"range({i}, {n})",
                f"range({i} + 1, {n})",
                f"range({i}, -1, -1)",
                f"range({i})",
            ]
            self.features.add("triangular")
        head = self.pick(options)
        if "-1, -1" in head:
            self.features.add("negative step")
        return f"for {var} in {head}:"

    # -- statements ---------------------------------------------------------------------------
    def loop(self, depth: int, idx: list[str]) -> None:
        var = self.name("ijk"[len(idx)])
        self.emit(depth, self.header(idx, var))
        inner = idx + [var]
        count = int(self.rng.integers(1, 4))
        for _ in range(count):
            self.statement(depth + 1, inner)
        if self.rng.random() < 0.3:
            self.jump(depth + 1, inner)

    def statement(self, depth: int, idx: list[str]) -> None:
        kinds = ["element", "element", "slice", "scalar", "reduce", "buffer", "if", "rows", "while"]
        if len(idx) < self.max_depth:
            kinds += ["loop", "loop"]
        kind = self.pick(kinds)
        getattr(self, f"_{kind}")(depth, idx)

    def _loop(self, depth: int, idx: list[str]) -> None:
        self.features.add("nested")
        self.loop(depth, idx)

    def _element(self, depth: int, idx: list[str]) -> None:
        A, v, K = self.name("A"), self.name("v"), self.name("K")
        r, c = self.index(idx), self.index(idx)
        self.features.add("element")
        self.emit(
            depth,
            self.pick(
                [
                    f"{A}[{r}, {c}] = {A}[{r}, {c}] * 0.5 + {A}[{c}, {r}] * 0.25",
                    f"{A}[{r}, {c}] -= {A}[{c}, {c}] * 0.1",
                    f"{v}[{r}] += {A}[{r}, {c}]",
                    f"{v}[{r}] = {v}[{c}] * 0.5 - {A}[{c}, {r}]",
                    f"{K}[{r}, {c}] = ({K}[{r}, {c}] * 3 + {K}[{c}, {r}]) % 1009",
                    f"{K}[{r}, {c}] ^= {K}[{c}, {c}] << 1",
                ]
            ),
        )

    def _slice(self, depth: int, idx: list[str]) -> None:
        A, v, K, n = self.name("A"), self.name("v"), self.name("K"), self.name("n")
        r = self.index(idx)
        self.features.add("slice")
        static = [
            f"{A}[{r}, :] = {A}[{r}, :] * 0.5 + {v}",
            f"{A}[:, {r}] -= {v} * 0.125",
            f"{v}[:] = {v} * 0.75 + {A}[{r}, :] * 0.25",
            f"{K}[{r}, :] = {K}[{r}, :] // 2 + {K}[:, {r}] % 7",
            f"{A}[{r}, 1:] = {A}[{r}, 1:] * 0.5 + {A}[{r}, :{n} - 1] * 0.25",
        ]
        # bounds that are the index: in a graph loop, lengths known only at run time
        bounded = [
            f"{A}[{r}, :{r}] *= 0.5",
            f"{v}[{r}:] += 1.0",
            f"{A}[{r}, {r}:] -= {A}[{r}, {r}:] * 0.25",
            f"{v}[{r}::2] *= 0.5",
            f"{v}[-({r}):] += 0.5",
            f"{A}[:{r}, {r}] = {A}[:{r}, {r}] * 0.5 + {v}[:{r}]",
            f"{K}[{r}, {r}::-1] += {K}[{r}, :{r} + 1] // 3",
        ]
        line = self.pick(static + bounded)
        if line in bounded and idx:
            self.features.add("traced slice bounds")
        self.emit(depth, line)

    def _scalar(self, depth: int, idx: list[str]) -> None:
        A, v, K, s, t = (self.name(x) for x in "AvKst")
        r, c = self.index(idx), self.index(idx)
        self.features.add("carried scalar")
        self.emit(
            depth,
            self.pick(
                [
                    f"{s} = {s} * 0.5 + {A}[{r}, {c}]",
                    f"{s} += {v}[{r}]",
                    f"{t} = ({t} * 31 + {K}[{r}, {c}]) % 1000003",
                    f"{t} += {K}[{r}, {c}]",
                    f"{t} = {t} ^ ({K}[{r}, {c}] & 255)",
                ]
            ),
        )

    def _reduce(self, depth: int, idx: list[str]) -> None:
        A, v, K, s, t = (self.name(x) for x in "AvKst")
        r = self.index(idx)
        self.features.add("reduction")
        self.emit(
            depth,
            self.pick(
                [
                    f"{s} = {s} + np.max({A}[{r}, :])",
                    f"{v}[{r}] = np.min({A}[:, {r}])",
                    f"{t} = {t} + np.sum({K}[{r}, :])",
                    f"{t} = {t} + int(0) + np.max({K}[:, {r}])",
                    f"{s} = {s} + sum({A}[{r}, :])",
                    f"{v}[{r}] = sum({A}[:, {r}]) * 0.5",
                    f"{v}[:] = sum({A}) * 0.25",
                    f"{t} = {t} + np.sum({K}[:{r}, {r}])",
                    f"{t} = {t} + np.dot({K}[{r}, :{r}], {K}[:{r}, {r}])",
                    f"{s} = {s} + np.max({A}[{r}, {r}:])",
                ]
            ),
        )

    def _buffer(self, depth: int, idx: list[str]) -> None:
        if not self.buffers:
            self._element(depth, idx)
            return
        b, A, v = self.pick(self.buffers), self.name("A"), self.name("v")
        r, c = self.index(idx), self.index(idx)
        self.features.add("buffer")
        self.emit(
            depth,
            self.pick(
                [
                    f"{b}[{r}] = {b}[{c}] * 0.5 + {A}[{r}, {c}]",
                    f"{b}[{r}] += {v}[{c}]",
                    f"{v}[{r}] = {b}[{r}] - {b}[{c}] * 0.25",
                    f"{b}[:] = {b} * 0.5",
                ]
            ),
        )

    def _rows(self, depth: int, idx: list[str]) -> None:
        """A ``for`` over the rows of a traced array: a graph loop (TensorFlow's rule)."""
        A, v, s, row = self.name("A"), self.name("v"), self.name("s"), self.name(f"row{depth}")
        self.features.add("rows of a traced array")
        self.emit(depth, f"for {row} in {A}:")
        self.emit(
            depth + 1,
            self.pick(
                [
                    f"{s} = {s} * 0.5 + np.max({row})",
                    f"{v}[:] = {v} * 0.5 + {row} * 0.25",
                    f"{s} = {s} + {row}[0]",
                ]
            ),
        )

    def _while(self, depth: int, idx: list[str]) -> None:
        """A ``while`` whose test reads data: a graph loop carrying a Python int."""
        A, v, n, w = self.name("A"), self.name("v"), self.name("n"), self.name(f"w{depth}")
        self.features.add("traced while")
        self.emit(depth, f"{w} = 0")
        self.emit(depth, f"while {w} < {n} and {A}[{w}, {w}] < 1.0:")
        self.emit(depth + 1, f"{v}[{w}] += 0.5")
        self.emit(depth + 1, f"{w} += 1")

    def _if(self, depth: int, idx: list[str]) -> None:
        A, K, s = self.name("A"), self.name("K"), self.name("s")
        r, c = self.index(idx), self.index(idx)
        self.features.add("traced if")
        self.emit(depth, self.pick([f"if {A}[{r}, {c}] > 0.0:", f"if {K}[{r}, {c}] % 3 == 1:"]))
        self.emit(depth + 1, f"{A}[{r}, {c}] = {A}[{r}, {c}] * 0.5")
        if self.rng.random() < 0.6:
            self.emit(depth, "else:")
            self.emit(depth + 1, f"{s} = {s} + 1.0")

    def jump(self, depth: int, idx: list[str]) -> None:
        A, K = self.name("A"), self.name("K")
        r, c = self.index(idx), self.index(idx)
        word = self.pick(["break", "continue"])
        self.features.add(word)
        test = self.pick(
            [
                f"{A}[{r}, {c}] > 1.5",
                f"{K}[{r}, {c}] % 5 == 0",
                f"{idx[-1]} % 3 == 2",
                f"{idx[-1]} == {self.name('n')} // 2",
            ]
        )
        if "%" in test and idx[-1] in test.split()[0]:
            self.features.add(f"python {word}")
        # the jump goes first in the body half the time: the statements after it are skipped
        at = len(self.lines) if self.rng.random() < 0.5 else self._body_start(depth)
        self.lines[at:at] = ["    " * depth + f"if {test}:", "    " * (depth + 1) + word]

    def _body_start(self, depth: int) -> int:
        """The index of the first statement of the loop body at ``depth`` just written."""
        k = len(self.lines) - 1
        head = "    " * (depth - 1) + "for "
        while k >= 0 and not self.lines[k].startswith(head):
            k -= 1
        return k + 1


def make_loop_program(seed: int, n: int, prefix: str = "", max_depth: int = 3) -> LoopProgram:
    """A random loop nest program on ``n``-by-``n`` inputs (module docstring)."""
    rng = np.random.default_rng(seed)
    w = _Writer(rng, prefix, n, max_depth)
    A, v, K = w.name("A"), w.name("v"), w.name("K")
    w.emit(0, f"{w.name('n')} = {A}.shape[0]")
    w.emit(0, f"{w.name('s')} = 0.0")
    w.emit(0, f"{w.name('t')} = 0")
    if rng.random() < 0.5:
        b = w.name("zb")
        w.emit(0, f"{b} = np.zeros({w.name('n')})")
        w.buffers.append(b)
    if rng.random() < 0.4:
        b, i = w.name("eb"), w.name("e")
        w.emit(0, f"{b} = np.empty({w.name('n')})")
        w.emit(0, f"for {i} in range({w.name('n')}):")
        w.emit(1, f"{b}[{i}] = {A}[{i}, {i}] * 0.5")
        w.buffers.append(b)
        w.features.add("np.empty buffer")
    for _ in range(int(rng.integers(1, 3))):
        w.loop(0, [])
    floats = np.float32 if rng.random() < 0.3 else np.float64  # weak Python scalars
    inputs = [
        rng.standard_normal((n, n)).astype(floats),
        rng.standard_normal(n).astype(floats),
        rng.integers(-50, 50, (n, n)).astype(np.int64),
    ]
    if floats is np.float32:
        w.features.add("float32")
    outputs = [w.name("s"), w.name("t"), *w.buffers, A, v, K]
    return LoopProgram(seed, n, w.lines, [A, v, K], inputs, outputs, w.features)


def make_wide_program(seed: int, rows: int, cols: int, prefix: str = "") -> LoopProgram:
    """Row loops over ``rows`` long rows of ``cols`` elements (module docstring)."""
    rng = np.random.default_rng(seed)
    A, v, K, s, t, i = (f"{prefix}{x}" for x in ("A", "v", "K", "s", "t", "i"))
    lines = [f"{s} = 0.0", f"{t} = 0"]
    head = rng.choice([f"range(1, {A}.shape[0])", f"range({A}.shape[0] - 1, 0, -1)"])
    lines.append(f"for {i} in {head}:")
    stmts = [
        f"{A}[{i}, :] = {A}[{i}, :] * 0.5 + {A}[{i} - 1, :] * 0.25",
        f"{A}[{i} - 1, 1:] -= {A}[{i}, :-1] * 0.125",
        f"{v}[:] = {v} * 0.5 + {A}[{i}, :]",
        f"{s} = {s} * 0.5 + np.max({A}[{i}, :])",
        f"{t} = {t} + np.sum({K}[{i}, :])",
        f"{K}[{i}, :] ^= {K}[{i} - 1, :] >> 1",
        f"{s} = {s} + np.min({v})",
    ]
    for k in rng.permutation(len(stmts))[: int(rng.integers(2, 5))]:
        lines.append("    " + stmts[k])
    if rng.random() < 0.3:
        lines[-1:-1] = [f"    if {A}[{i}, 0] > 1.0:", "        break"]
    inputs = [
        rng.standard_normal((rows, cols)),
        rng.standard_normal(cols),
        rng.integers(-1000, 1000, (rows, cols)).astype(np.int64),
    ]
    return LoopProgram(seed, rows * cols, lines, [A, v, K], inputs, [s, t, A, v, K], {"wide rows"})


class LoopBatch:
    """Programs joined into one module-level function, loaded from a real file."""

    def __init__(self, programs: list[LoopProgram]) -> None:
        self.programs = programs
        params = [p for prog in programs for p in prog.params]
        lines = [line for prog in programs for line in prog.lines]
        outputs = [o for prog in programs for o in prog.outputs]
        body = "\n".join("    " + line for line in lines)
        name = f"loop_batch_{next(_COUNTER)}"
        self.source = (
            f"import numpy as np\n\n\ndef {name}({', '.join(params)}):\n{body}\n"
            f"    return ({', '.join(outputs)},)\n"
        )
        path = _DIR / f"{name}.py"
        path.write_text(self.source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        self.function = getattr(module, name)
        self.inputs = [x for prog in programs for x in prog.inputs]

    def describe(self) -> str:
        return "\n".join(f"# seed {p.seed}, n={p.n}\n" + p.source() for p in self.programs)
