"""``tw.distributions``: PyTorch's probability distributions, on every backend.

Parameters are tensors (or numbers) on any device; ``sample`` draws without gradient,
``rsample`` with reparameterized gradients where the distribution has them (Normal, Uniform,
Laplace, Exponential, Gamma, Beta, Dirichlet, the multivariate normals, the relaxed
categorical), ``log_prob``, ``entropy``, ``mean``, ``variance``, ``cdf``/``icdf`` where PyTorch
has them, and ``kl_divergence`` for the registered pairs. Draws are seeded by
``tw.manual_seed``.
"""

from tensorweaver.distributions import constraints, transforms
from tensorweaver.distributions.bernoulli import Bernoulli
from tensorweaver.distributions.categorical import Categorical, OneHotCategorical
from tensorweaver.distributions.counts import Binomial, Poisson
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.exponential import Exponential
from tensorweaver.distributions.gamma import Beta, Chi2, Dirichlet, Gamma
from tensorweaver.distributions.independent import Independent
from tensorweaver.distributions.kl import kl_divergence, register_kl
from tensorweaver.distributions.laplace import Laplace
from tensorweaver.distributions.mixture_same_family import MixtureSameFamily
from tensorweaver.distributions.multivariate_normal import (
    LowRankMultivariateNormal,
    MultivariateNormal,
)
from tensorweaver.distributions.normal import Normal
from tensorweaver.distributions.relaxed_categorical import (
    ExpRelaxedCategorical,
    RelaxedOneHotCategorical,
)
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    TanhTransform,
    Transform,
)
from tensorweaver.distributions.uniform import Uniform

__all__ = [
    "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Chi2",
    "ComposeTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform",
    "Exponential", "Gamma", "Independent", "Laplace", "LowRankMultivariateNormal",
    "MixtureSameFamily", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson",
    "PowerTransform", "RelaxedOneHotCategorical", "SigmoidTransform", "SoftmaxTransform",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "constraints",
    "kl_divergence", "register_kl", "transforms",
]  # fmt: skip
