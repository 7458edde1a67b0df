"""``tw.distributions``: PyTorch's probability distributions, on every backend.

Parameters are tensors (or numbers) on any device; ``sample`` draws without gradient,
``rsample`` with reparameterized gradients where the distribution has them (the continuous
ones except VonMises), ``log_prob``, ``entropy``, ``mean``, ``variance``, ``cdf``/``icdf``
where PyTorch has them, and ``kl_divergence`` for the registered pairs. Draws are seeded by
``tw.manual_seed``. Transforms (``transforms`` and the ones exported here) and the
``biject_to``/``transform_to`` registries map unconstrained tensors onto supports.
"""

from tensorweaver.distributions import constraints, transforms
from tensorweaver.distributions.bernoulli import Bernoulli
from tensorweaver.distributions.categorical import Categorical, OneHotCategorical
from tensorweaver.distributions.cauchy import Cauchy
from tensorweaver.distributions.cdf_transform import CumulativeDistributionTransform
from tensorweaver.distributions.cholesky_transforms import (
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
)
from tensorweaver.distributions.constraint_registry import biject_to, transform_to
from tensorweaver.distributions.continuous_bernoulli import ContinuousBernoulli
from tensorweaver.distributions.counts import Binomial, Poisson
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.exponential import Exponential
from tensorweaver.distributions.exponential_family import ExponentialFamily
from tensorweaver.distributions.fisher_snedecor import FisherSnedecor
from tensorweaver.distributions.gamma import Beta, Chi2, Dirichlet, Gamma
from tensorweaver.distributions.generalized_pareto import GeneralizedPareto
from tensorweaver.distributions.geometric import Geometric
from tensorweaver.distributions.gumbel import Gumbel
from tensorweaver.distributions.half import AbsTransform, HalfCauchy, HalfNormal
from tensorweaver.distributions.independent import Independent
from tensorweaver.distributions.independent_transform import IndependentTransform
from tensorweaver.distributions.inverse_gamma import InverseGamma
from tensorweaver.distributions.kl import kl_divergence, register_kl
from tensorweaver.distributions.kumaraswamy import Kumaraswamy
from tensorweaver.distributions.laplace import Laplace
from tensorweaver.distributions.lkj_cholesky import LKJCholesky
from tensorweaver.distributions.log_normal import LogNormal
from tensorweaver.distributions.logistic_normal import LogisticNormal, StickBreakingTransform
from tensorweaver.distributions.mixture_same_family import MixtureSameFamily
from tensorweaver.distributions.multinomial import Multinomial
from tensorweaver.distributions.multivariate_normal import (
    LowRankMultivariateNormal,
    MultivariateNormal,
)
from tensorweaver.distributions.negative_binomial import NegativeBinomial
from tensorweaver.distributions.normal import Normal
from tensorweaver.distributions.pareto import Pareto
from tensorweaver.distributions.part_transforms import CatTransform, StackTransform
from tensorweaver.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from tensorweaver.distributions.relaxed_categorical import (
    ExpRelaxedCategorical,
    RelaxedOneHotCategorical,
)
from tensorweaver.distributions.reshape_transform import ReshapeTransform
from tensorweaver.distributions.softplus_transform import SoftplusTransform
from tensorweaver.distributions.straight_through import OneHotCategoricalStraightThrough
from tensorweaver.distributions.student_t import StudentT
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
    identity_transform,
)
from tensorweaver.distributions.uniform import Uniform
from tensorweaver.distributions.von_mises import VonMises
from tensorweaver.distributions.weibull import Weibull
from tensorweaver.distributions.wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
    "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily", "FisherSnedecor",
    "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal",
    "LogisticNormal", "LogitRelaxedBernoulli", "LowRankMultivariateNormal",
    "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
    "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
    "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT", "TanhTransform",
    "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart",
    "biject_to", "constraints", "identity_transform", "kl_divergence", "register_kl",
    "transform_to", "transforms",
]  # fmt: skip
