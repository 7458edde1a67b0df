"""``OneHotCategoricalStraightThrough(probs=None, logits=None)``: one-hot draws whose
``rsample`` passes the gradient of ``probs`` straight through the discrete draw."""

from __future__ import annotations

from tensorweaver.distributions.categorical import OneHotCategorical
from tensorweaver.tensor import Size, Tensor


class OneHotCategoricalStraightThrough(OneHotCategorical):
    has_rsample = True

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        draws = self.sample(sample_shape)
        probs = self._categorical.probs
        return draws + (probs - probs.detach())
