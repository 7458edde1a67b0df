"""``multinomial``: draw category indices from rows of non-negative weights, PyTorch's API.

With replacement, each draw is the first category whose running sum of weights exceeds a
uniform draw scaled to the row's total. Without replacement, each category gets the key
``E / w`` with ``E`` exponentially distributed, and the ``num_samples`` smallest keys win:
the same law as drawing one at a time and removing what was drawn (Efraimidis and
Spirakis), in one sort; once the categories of positive weight run out, those of weight
zero follow in index order (PyTorch, too, returns them rather than raising). Draws use the
backend's own generator (``tw.manual_seed``).
"""

from __future__ import annotations

from tensorweaver.autograd.mode import no_grad
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.sort import argsort
from tensorweaver.tensor import Tensor


def _check_weights(p: Tensor, num_samples: int, replacement: bool) -> None:
    if not p.dtype.is_floating_point or p.ndim not in (1, 2) or p.shape[-1] == 0:
        raise RuntimeError(
            f"multinomial: expected a 1-d or 2-d floating-point tensor of weights with at "
            f"least one category, got {p.dtype.name} of shape {list(p.shape)}"
        )
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples ({num_samples})")
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError(
            f"multinomial: cannot sample n_sample ({num_samples}) > prob_dist.size(-1) "
            f"({p.shape[-1]}) samples without replacement; pass replacement=True"
        )
    if rd.any(ew.logical_not(ew.logical_and(ew.isfinite(p), ew.ge(p, 0)))).item():
        raise RuntimeError(
            "multinomial: probability tensor contains either inf, nan or element < 0"
        )
    positive = rd.sum(ew.gt(p, 0), -1)
    if rd.any(ew.eq(positive, 0)).item():
        raise RuntimeError(
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
    """``num_samples`` category indices (int64) for each row of weights in ``input``
    (``(C,)`` or ``(N, C)``; weights need not sum to one)."""
    _check_weights(input, num_samples, replacement)
    with no_grad():
        p = input if input.ndim == 2 else mv.unsqueeze(input, 0)
        rows, categories = p.shape
        if replacement:
            cdf = rd.cumsum(p, -1)
            totals = mv.narrow(cdf, 1, categories - 1, 1)
            draws = ew.mul(cr.rand(rows, num_samples, dtype=p.dtype, device=p), totals)
            # The count of running sums at or below a draw is the category it falls in
            # (a category of weight zero has the running sum of the one before: never hit).
            below = ew.le(mv.unsqueeze(mv.narrow(cdf, 1, 0, categories - 1), 1), draws[..., None])
            drawn = rd.sum(below, -1)
        else:
            keys = ew.div(ew.neg(ew.log(cr.rand(rows, categories, dtype=p.dtype, device=p))), p)
            drawn = mv.narrow(argsort(keys, -1), 1, 0, num_samples)
    return drawn if input.ndim == 2 else mv.squeeze(drawn, 0)
