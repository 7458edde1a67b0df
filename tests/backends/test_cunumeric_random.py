"""Seeded draws on cuPyNumeric are the same whatever consumes them and however soon.

cuPyNumeric 26.06's generator does not order the ops that read a fresh sample after the
draw that fills it; an op could read the buffer first, so a seeded model's weights changed
from run to run (an LSTM's from its fourth parameter on). The backend fences each draw.

Its generator also writes samples in the memory order of the buffer it is handed, and Legate
may hand it one that a LAPACK task (QR) left column-major: an N-d draw then came out
transposed, depending on which ops ran before (``nn.init.orthogonal_`` after tests/linalg).
The backend draws flat and reshapes.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
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


@pytest.mark.parametrize(
    ("draw", "shape"),
    [
        (lambda *s: tw.randn(*s, dtype=tw.float64), (3, 3)),
        (lambda *s: tw.rand(*s, dtype=tw.float64), (3, 3)),
        (lambda *s: tw.randint(0, 1000, s), (3, 3)),
        (lambda *s: tw.randint(-5, 100, s, dtype=tw.int8), (3, 3)),
        (lambda *s: tw.randn(*s, dtype=tw.float64), (2, 3, 4)),
    ],
    ids=["randn", "rand", "randint-int64", "randint-int8", "randn-3d"],
)
def test_seeded_draws_after_a_qr_are_in_stream_order(draw, shape: tuple[int, ...]) -> None:
    # As in PyTorch, a seeded N-d draw holds the same stream as a flat one, in C order,
    # whatever ran before it; a QR of a matrix of the same size is what recycled a
    # column-major buffer into the generator (the first draw after it came out transposed).
    with entered("cunumeric"):
        flat = []
        for _ in range(3):
            tw.manual_seed(3)
            flat.append(draw(int(np.prod(shape))).numpy().reshape(shape))
            tw.linalg.qr(tw.randn(*shape, dtype=tw.float64))
            tw.manual_seed(3)
            assert np.array_equal(draw(*shape).numpy(), flat[-1])


def test_the_stream_order_is_torchs() -> None:
    # the property the test above holds cuPyNumeric to, as torch 2.13 has it
    torch.manual_seed(3)
    shaped = torch.randn(2, 3, 4, dtype=torch.float64)
    torch.manual_seed(3)
    assert torch.equal(torch.randn(24, dtype=torch.float64).reshape(2, 3, 4), shaped)
