"""One description of a segment's kernel call (``SegmentCall``), consumed by every renderer.

The kernel generator writes each variant's parameters from the description, and the three
host-side renderers — the CPU runner, the CUDA runner and the whole-graph emitter — pass
their arguments in the order it gives, so they cannot disagree with the kernels.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import codegen, fused, runners, whole_graph
from kernel_ext.backends.emit import Namer
from kernel_ext.backends.segment_call import CallRenderer, SegmentCall, describe
from kernel_ext.passes.fusion import partition


def _graph(fn, *args):
    return kx.function(fn, backend="numpy").get_concrete_function(*args).graph


def _params(source: str, name: str) -> list[str]:
    m = re.search(rf"^def {name}\(([^)]*)\):", source, re.M)
    assert m is not None, f"no def {name} in\n{source}"
    return [p.strip() for p in m.group(1).split(",") if p.strip()]


def _map_and_sum(x, b, s):
    # broadcasting, a scalar input, a NumPy loop call (tanh), two outputs and a reduction
    y = np.tanh(x * b + s)
    return y, np.sum(y * 2.0)


ARGS = (
    np.linspace(-1, 1, 24).reshape(4, 6).astype(np.float32),
    np.linspace(0, 1, 6).astype(np.float32),
    np.float32(0.5),
)


def _plan(target: str) -> fused.SegmentPlan:
    (plan,) = fused.plan_segments(_graph(_map_and_sum, *ARGS), "numba", target)
    return plan


def test_every_renderer_shares_the_call_renderer_base():
    for renderer in (
        runners.CpuRunnerWriter,
        runners.CudaRunnerWriter,
        whole_graph.values.SegmentArgs,
    ):
        assert issubclass(renderer, CallRenderer)


def test_cpu_kernels_take_the_parameters_the_description_names():
    plan = _plan("cpu")
    call = plan.ksrc.call
    assert isinstance(call, SegmentCall)
    assert call.loops and call.scalar_inputs and call.reduction is not None
    for variant, name in (("flat", "k_flat"), ("nd", "k_nd")):
        assert _params(plan.ksrc.source, name) == call.params(variant)


def test_the_cpu_runner_passes_arguments_in_the_descriptions_order():
    plan = _plan("cpu")
    call = plan.ksrc.call
    writer = runners.CpuRunnerWriter(plan, 0, Namer())
    writer.runner()
    source = "\n".join(writer.out.lines)
    for variant in ("flat", "nd"):
        exprs = writer.arguments(call, variant)
        assert len(exprs) == len(call.args(variant))
        for (kind, index), expr in zip(describe(call, variant), exprs):
            if kind == "output":
                assert expr == f"o{index}"
            if kind in ("array", "scalar"):
                assert re.search(rf"\bv{index}\b", expr)
    # (the static domain (4, 6) broadcasts b: only the n-d branch is written)
    assert "kf(" not in source
    assert f"kn({', '.join(writer.arguments(call, 'nd'))})" in source
    same = (ARGS[0], ARGS[0] + 1, ARGS[2])
    (plan,) = fused.plan_segments(_graph(_map_and_sum, *same), "numba", "cpu")
    writer = runners.CpuRunnerWriter(plan, 0, Namer())
    writer.runner()
    start, stop, *rest = writer.arguments(plan.ksrc.call, "flat")
    source = "\n".join(writer.out.lines)
    assert f"kf({start}, {stop}, {', '.join(rest)})" in source
    assert f"_run_parallel(kf, {stop}, ({', '.join(rest)},))" in source


def test_the_cuda_runner_packs_the_launch_in_the_kernels_order():
    plan = _plan("cuda")
    call = plan.ksrc.call
    cpu = _plan("cpu").ksrc.call
    # one segment, one description of its inputs and outputs on both targets
    assert (call.array_inputs, call.scalar_inputs, call.map_outputs) == (
        cpu.array_inputs,
        cpu.scalar_inputs,
        cpu.map_outputs,
    )
    assert _params(plan.ksrc.source, "k_cuda") == call.params("cuda")
    writer = runners.CudaRunnerWriter(plan, 0, Namer())
    writer.runner()
    namespace: dict = {}
    exec("\n".join(writer.out.lines), {"np": np, **runners.RUNTIME}, namespace)
    packed = namespace["_pack0"]("N", ("D0", "D1"), ["I0", "I1"], ["S0"], ["O0"], "A", "F")
    expected = {"total": "N", "acc": "A", "flag": "F"}
    for arg, value in zip(call.args("cuda"), packed):
        if arg.kind in expected:
            assert value == expected[arg.kind]
        elif arg.kind == "dim":
            assert value == f"D{arg.index}"
        elif arg.kind == "array":
            assert value == f"I{call.array_inputs.index(arg.index)}"
        elif arg.kind == "scalar":
            assert value == f"S{call.scalar_inputs.index(arg.index)}"
        else:
            assert arg.kind == "output" and value == f"O{call.map_outputs.index(arg.index)}"
    assert len(packed) == len(call.args("cuda"))


@pytest.mark.parametrize("variant", ["flat", "nd"])
def test_the_whole_graph_embeds_kernels_with_block_buffers_passed_in(variant):
    graph = _graph(_map_and_sum, *ARGS)
    (seg,) = partition(graph, lambda n: codegen.can_compile(n, "cpu"))
    embedding = codegen.KernelEmbedding(seg, "s0_")
    kernel = embedding.kernel(variant, f"s0_{variant}")
    call = kernel.call
    assert call.args(variant) == embedding.call.args(variant)
    params = _params(kernel.text, f"s0_{variant}")
    assert params == call.params(variant, scratch=True)
    assert params[: len(call.args(variant))] == call.params(variant)
    assert call.scratch_of(variant)
    # embedded: no buffer allocated in the kernel; standalone: each one is
    assert "np.empty" not in kernel.text
    standalone = codegen.generate(seg).source
    for buf in call.scratch_of(variant):
        assert f"    {buf.name} = {buf.allocation()}" in standalone
    renderer = whole_graph.values.SegmentArgs()
    renderer.inputs = {i: f"x{i}" for i in range(len(seg.inputs))}
    renderer.outputs = {i: f"o{i}" for i in call.map_outputs}
    renderer.dims, renderer.size, renderer.acc = ["n0", "n1"], "size", "acc"
    renderer.loops = list(range(len(call.loops)))
    renderer.scratch = [f"s0_{b.name}" for b in call.scratch_of(variant)]
    assert len(renderer.arguments(call, variant, scratch=True)) == len(params)


def test_a_reductions_combine_and_identity_come_from_its_accumulator():
    """The op table's ``accumulator`` ufunc decides how partial values fold (written as the
    ufunc's inline template) and where the fold starts."""
    from kernel_ext.ir import OpKind

    x = np.arange(6, dtype=np.int32)
    cases = {"sum": np.sum, "max": np.max, "min": np.min, "any": np.any, "all": np.all}
    for name, fn in cases.items():
        graph = _graph(lambda v, fn=fn: fn(v > 2) if name in ("any", "all") else fn(v), x)
        node = next(n for n in graph.nodes if n.op is OpKind(name))
        plan = codegen.reduction_plan(node)
        ufunc = node.op.accumulator
        if ufunc.identity is not None:
            assert plan.identity == ufunc.identity
        else:  # maximum/minimum: the dtype's extreme the ufunc never picks
            info = np.iinfo(np.int32)
            assert plan.identity == (info.min if ufunc is np.maximum else info.max)
        # (integer sums add with the wrapping intrinsic: NumPy's integers wrap)
        assert plan.combine("a", "v") in (
            "_wadd(a, v)",
            "(a | v)",
            "(a & v)",
            "(a if a >= v else v)",
            "(a if a <= v else v)",
        )
