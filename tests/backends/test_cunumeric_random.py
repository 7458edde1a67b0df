"""Seeded draws on cuPyNumeric are the same whatever consumes them and however soon.

cuPyNumeric 26.06's generator does not order the ops that read a fresh sample after the
draw that fills it; an op could read the buffer first, so a seeded model's weights changed
from run to run (an LSTM's from its fourth parameter on). The backend fences each draw.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver_cunumeric import legate_config
from tw_backends import entered

pytestmark = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)


def _weights() -> dict[str, np.ndarray]:
    tw.manual_seed(7)
    lstm = tw.nn.LSTM(4, 5, num_layers=3)
    return {k: v.detach().numpy() for k, v in lstm.state_dict().items()}


def test_a_seeded_model_has_the_same_weights_every_time() -> None:
    with entered("cunumeric"):
        runs = [_weights() for _ in range(4)]
    for run in runs[1:]:
        assert {k: np.array_equal(v, runs[0][k]) for k, v in run.items()} == dict.fromkeys(
            run, True
        )
