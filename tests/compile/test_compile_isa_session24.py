"""tw.compile on torch:cpu and the width of inductor's CPU vectors.

Inductor (torch 2.13) picks that width from ATEN_CPU_CAPABILITY (512 bits on an AVX-512
CPU, 256 under ``avx2``) but leaves it out of the key of its on-disk FX graph cache, so a
process under one capability reused C++ cached by a process under another and built it for
its own width: the kit's compile/training_step on torch:cpu gave NaN or huge losses under
ATEN_CPU_CAPABILITY=avx2 on an AVX-512 machine whose cache normal runs had filled. The
torch backend sets the width among inductor's settings (``cpp.simdlen``), which are in the
key. Most tests stand in for torch.compile (no inductor compilation); one compiles twice
with inductor (15-60 s) and runs where TW_INDUCTOR_ISA=1.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

CALLS = 4  # traces, then the call that compiles, then trials against the replay


def _f(a: Any, b: Any) -> Any:
    """Elementwise work that inductor fuses into one vectorised loop (37 elements: whole
    vectors and a tail at either width)."""
    return (a * b + 1).relu() * 3 - b.exp()


def _width() -> int:
    """The vector width inductor picks under the ATEN_CPU_CAPABILITY now set (imported
    here: importing inductor costs seconds, which collecting this file should not)."""
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    return pick_vec_isa().bit_width()


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(-2.0, 2.0, 37), np.linspace(0.0, 1.0, 37)


def _compiled_results(**compile_kwargs: Any) -> list[np.ndarray]:
    """What a fresh tw.compile of :func:`_f` returns on each of CALLS calls on torch:cpu."""
    a, b = _inputs()
    with tw.device("torch:cpu"):
        x, y = tw.tensor(a), tw.tensor(b)
    compiled = tw.compile(_f, **compile_kwargs)
    return [np.asarray(compiled(x, y)) for _ in range(CALLS)]


def _capability_of_another_width(monkeypatch: pytest.MonkeyPatch) -> str:
    """An ATEN_CPU_CAPABILITY (now set) under which inductor picks another vector width
    than here: avx2 on an AVX-512 machine, scalar code on an AVX2 one."""
    here = _width()
    for capability in ("avx2", "default"):
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", capability)
        if _width() != here:
            return capability
    pytest.skip("inductor has a single vector width on this machine")


@pytest.fixture
def compile_options(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keywords each torch.compile call gets; the graph then runs as compiled code
    runs it (grad mode off), with no inductor compilation."""
    seen: list[dict[str, Any]] = []

    def stand_in(graph: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return torch.no_grad()(graph)

    monkeypatch.setattr(torch, "compile", stand_in)
    return seen


def test_torch_compile_is_given_the_vector_width_inductor_picks(
    compile_options: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _compiled_results()
    width = _width()
    other = _capability_of_another_width(monkeypatch)
    _compiled_results()
    assert len(compile_options) == 2, "the hook did not hand the graph to torch.compile"
    widths = [kwargs.get("options", {}).get("cpp.simdlen") for kwargs in compile_options]
    assert widths == [width, _width()], (
        f"torch.compile's cpp.simdlen here and under ATEN_CPU_CAPABILITY={other}"
    )
    assert widths[0] != widths[1]


def test_a_mode_s_settings_come_with_the_vector_width(
    compile_options: list[dict[str, Any]],
) -> None:
    from torch._inductor import list_mode_options

    _compiled_results(mode="max-autotune-no-cudagraphs")
    (kwargs,) = compile_options
    want = {
        **list_mode_options("max-autotune-no-cudagraphs"),
        "cpp.simdlen": _width(),
    }
    assert kwargs.get("options") == want and kwargs.get("mode") is None


def test_a_vector_width_set_in_inductor_s_config_is_left_to_it(
    compile_options: list[dict[str, Any]],
) -> None:
    from torch._inductor import config

    with config.patch({"cpp.simdlen": 256}):
        _compiled_results()
    (kwargs,) = compile_options
    assert "cpp.simdlen" not in kwargs.get("options", {})


@pytest.mark.skipif(
    not os.environ.get("TW_INDUCTOR_ISA"),
    reason="inductor compiles twice (15-60 s); TW_INDUCTOR_ISA=1 runs it",
)
def test_code_cached_under_another_capability_is_not_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torch._inductor.utils import fresh_cache

    a, b = _inputs()
    want = _f(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    with fresh_cache():  # one private cache for both compilations
        torch._dynamo.reset()
        here = _compiled_results()
        other = _capability_of_another_width(monkeypatch)
        torch._dynamo.reset()
        there = _compiled_results()
    for got in here:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    for got in there:
        np.testing.assert_allclose(
            got, want, rtol=1e-13, atol=1e-13, err_msg=f"ATEN_CPU_CAPABILITY={other}"
        )


def test_to_torch_module_s_compile_is_given_the_vector_width(
    compile_options: list[dict[str, Any]],
) -> None:
    tw.to_torch_module(tw.nn.Linear(3, 2), compile=True)
    (kwargs,) = compile_options
    assert kwargs.get("options", {}).get("cpp.simdlen") == _width()
