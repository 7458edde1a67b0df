"""The compile sweep's programs (test_sweep_programs.py) under the torch backend's
``compile_graph`` hook: torch.compile (inductor) fuses the graph, so a compiled step
equals the eager one within float tolerance. Each program compiles a few graphs (seconds
each, a minute in all): CI runs program 0 (scripts/test-remainder.sh), the default suite
none (test_compile_graph.py's torch.compile cases compile a training step through inductor
there); ``TW_SWEEP_INDUCTOR=N`` runs programs 0 to N - 1.
"""

from __future__ import annotations

import os

import pytest
from test_sweep_programs import plan, sweep

#: Program 0: self-attention with BatchNorm, AdamW (amsgrad), clipping, in-place updates of
#: the head through views, a parameter replaced and added to the optimizer, a global that
#: changes (no random draws, so inductor serves its graphs).
IN_CI = pytest.param(
    0, marks=pytest.mark.skip(reason="CI runs it: TW_SWEEP_INDUCTOR=1 (scripts/test-remainder.sh)")
)
SEEDS = range(int(os.environ.get("TW_SWEEP_INDUCTOR", "0"))) or [IN_CI]


@pytest.mark.parametrize("seed", SEEDS)
def test_an_inductor_compiled_program_steps_as_eagerly(seed: int) -> None:
    fn, _ = sweep(seed, "torch:cpu", hook=True)
    assert fn is not None or plan(seed).keywords["fullgraph"]
