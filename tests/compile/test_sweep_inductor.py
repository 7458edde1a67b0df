"""The compile sweep's programs (test_sweep_programs.py) under the torch backend's
``compile_graph`` hook: torch.compile (inductor) fuses the graph, so a compiled step
equals the eager one within float tolerance. Each program compiles a few graphs (seconds
each): the suite runs one; ``TW_SWEEP_INDUCTOR=N`` runs programs 0 to N - 1.
"""

from __future__ import annotations

import os

import pytest
from test_sweep_programs import plan, sweep

#: Self-attention with BatchNorm, AdamW (amsgrad), clipping, in-place updates of the head
#: through views, a parameter replaced and added to the optimizer, a global that changes
#: (no random draws, so inductor serves its graphs).
SUITE = [0]
SEEDS = range(int(os.environ.get("TW_SWEEP_INDUCTOR", "0"))) or SUITE


@pytest.mark.parametrize("seed", SEEDS)
def test_an_inductor_compiled_program_steps_as_eagerly(seed: int) -> None:
    fn, _ = sweep(seed, "torch:cpu", hook=True)
    assert fn is not None or plan(seed).keywords["fullgraph"]
