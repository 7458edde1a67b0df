"""Ten more real programs of kinds the ports had not met, in float64 so that every loss,
gradient and parameter they return must agree with torch's to ~1e-9: exact Gaussian-process
regression through Cholesky factors, a neural ODE integrated by a hand-written RK4 loop, the
Set Transformer beside DeepSets, Glow with an LU-decomposed 1x1 convolution and ActNorm's
data-dependent initialisation, soft actor-critic with a squashed Gaussian policy and an
entropy temperature, a capsule network with dynamic routing, DETR's Hungarian-matched set
criterion, a mixture density network beside a low-rank Gaussian head, a tiny NeRF with
hierarchical sampling and a physics-informed network for Burgers' equation; then the defects
the hunts around them found.

Each port runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (port_harness).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from port_harness import Port, port_params
from snippet_outcomes import same, same_each
from tw_backends import FAST

EXACT = {"rtol": 1e-9, "atol": 1e-12}

CASES = {
    # Batched ARD RBF kernel (cdist and broadcasting), jitter added on K.diagonal(...) in
    # place, linalg.cholesky, cholesky_solve, solve_triangular, MultivariateNormal(scale_tril)
    # log_prob; Adam + MultiStepLR, then LBFGS(strong_wolfe) with a closure.
    "gp-regression": Port("gp_regression", **EXACT),
    # Fixed-step RK4 through a time-conditioned ODEFunc (nn.init.normal_/constant_),
    # randint windows gathered by fancy indexing, RMSprop, clip_grad_norm_, ExponentialLR.
    "neural-ode-rk4": Port("neural_ode_rk4", **EXACT),
    # Heads by split/cat and bmm, masked_fill(-inf) key padding, ISAB/PMA with xavier
    # parameters, masked DeepSets pooling, L1/SmoothL1(beta), RAdam(weight_decay) and
    # Adam(amsgrad), CosineAnnealingWarmRestarts stepped with fractional epochs, randperm.
    "set-transformer": Port("set_transformer", **EXACT),
    # ActNorm data-dependent init through .data.copy_ and a uint8 buffer fill_, linalg.qr
    # and linalg.lu, masked triangular factors, diag/exp, conv2d with a built 1x1 weight,
    # inverse() in reverse, sigmoid coupling, F.pad(value=1), squeeze by view/permute,
    # warm-up learning rate written into param_groups.
    "glow": Port("glow", **EXACT),
    # Normal.rsample with a tanh-squash correction (np.log(2) in a tensor expression) and
    # Independent(TransformedDistribution(TanhTransform(cache_size=1))), twin Q critics,
    # deepcopy targets with Polyak .data.mul_/add_, requires_grad toggles, log_alpha leaf.
    "soft-actor-critic": Port("sac", **EXACT),
    # 5-D broadcast matmul of prediction vectors, routing logits updated in place
    # (b +=), softmax over capsules, squash by norm, margin loss, eye().index_select masks,
    # Sigmoid decoder with MSELoss(sum), Adam + ExponentialLR.
    "capsule-net": Port("capsule_net", **EXACT),
    # TransformerDecoder queries over a flattened feature map, a no_grad Hungarian matcher
    # (softmax costs, cdist(p=1), generalized IoU) solved by scipy's linear_sum_assignment,
    # target classes written by advanced-index assignment, weighted cross entropy over
    # (B, C, Q) logits, diag(giou), AdamW param groups, clip_grad_norm_, StepLR.
    "detr-matcher": Port("detr_matcher", **EXACT),
    # MixtureSameFamily(Categorical(logits), Independent(Normal)) log_prob/mean/variance,
    # LowRankMultivariateNormal log_prob/entropy/covariance_matrix, torch.sort, ASGD(t0),
    # Adadelta(weight_decay), clip_grad_value_, CosineAnnealingLR(eta_min).
    "mixture-density": Port("mixture_density", **EXACT),
    # meshgrid(indexing="ij") rays, sin/cos positional encodings, a skip-connected MLP split
    # by torch.split, volume rendering with an exclusive cumprod, hierarchical sampling by
    # cumsum/searchsorted(right=True)/gather of expanded CDFs/where/sort with detached
    # samples, randperm ray batches, Adam with a decayed lr written into param_groups.
    "nerf": Port("nerf_tiny", **EXACT),
    # Collocation leaves from requires_grad_ slices, first and second derivatives by
    # autograd.grad(grad_outputs=ones_like, create_graph=True), xavier_normal_, scaling by
    # registered bounds, Adam under ReduceLROnPlateau, then LBFGS(strong_wolfe, max_eval,
    # tolerances, history_size) with a counting closure.
    "pinn-burgers": Port("pinn_burgers", **EXACT),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_matches_pytorch_in_float64(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)


# -- what the hunts found ------------------------------------------------------------------


def _as_numpy_array(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A program handing ``make(m)`` to NumPy the way SciPy and plotting code do."""
    return lambda m: np.asarray(make(m))


#: Tensors that ``.numpy()`` refuses; torch's ``__array__`` goes through ``.numpy()``, so
#: ``np.asarray``/``np.array`` (and every SciPy call given such a tensor, as DETR's matcher
#: would be without its ``@torch.no_grad()``) refuse them too.
REFUSED_BY_NUMPY = {
    "requires-grad": _as_numpy_array(
        lambda m: m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    ),
    "conjugate-bit": _as_numpy_array(lambda m: m.tensor([1 + 2j], dtype=m.complex128).conj()),
    "negative-bit": _as_numpy_array(lambda m: m.tensor([1 + 2j]).conj().imag),
}


@pytest.mark.parametrize("spec", FAST)
def test_numpy_arrays_of_tensors_numpy_refuses_are_refused_as_torch(spec: str) -> None:
    same_each(REFUSED_BY_NUMPY, spec)


def _unused_input_materialized_in_batches(m: Any) -> Any:
    """A Jacobian by ``is_grads_batched`` with an input the output does not use."""
    x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    unused = m.tensor([0.1], dtype=m.float64, requires_grad=True)
    y = (x**2).sin()
    eye = m.eye(3, dtype=m.float64)
    jx, ju = m.autograd.grad(y, (x, unused), eye, is_grads_batched=True, materialize_grads=True)
    return jx, ju, ju.requires_grad


@pytest.mark.parametrize("spec", FAST)
def test_batched_grads_materialize_unused_inputs_as_torch(spec: str) -> None:
    same(_unused_input_materialized_in_batches, spec)


def _grads_by_name(m: Any) -> Any:
    """``autograd.grad`` with its inputs named in a dict, answered by a dict (torch 2.13)."""
    x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    w = m.tensor([2.0], dtype=m.float64, requires_grad=True)
    grads = m.autograd.grad((x**2 * w).sum(), {"x": x, "w": w})
    return type(grads).__name__, sorted(grads), grads["x"], grads["w"]


@pytest.mark.parametrize("spec", FAST)
def test_grad_of_a_dict_of_inputs_is_a_dict_as_torch(spec: str) -> None:
    same(_grads_by_name, spec)


#: A Python float searched for in a float64 sequence that holds it (a bin edge of a
#: histogram, a CDF value in NeRF-style inverse-transform sampling).
SCALAR_SEARCHES = {
    "searchsorted": lambda m: m.searchsorted(
        m.tensor([0.0, 0.2, 0.2, 0.7, 1.0], dtype=m.float64), 0.2
    ),
    "searchsorted-side-left": lambda m: m.searchsorted(
        m.tensor([0.0, 0.2, 0.7], dtype=m.float64), 0.2, side="left"
    ),
    "bucketize": lambda m: m.bucketize(0.2, m.tensor([0.0, 0.2, 0.4], dtype=m.float64)),
}


@pytest.mark.parametrize("spec", FAST)
def test_python_number_searched_in_float64_as_torch(spec: str) -> None:
    same_each(SCALAR_SEARCHES, spec, decimals=None)


def _relaxed_temperatures(m: Any) -> Any:
    """Gumbel-softmax relaxations of float64 probabilities at a Python-number temperature
    (as VAEs with discrete latents write them): what ``rsample`` divides by."""
    probs = m.tensor([0.3, 0.7], dtype=m.float64)
    logits = m.tensor([1.0, -1.0], dtype=m.float64)
    D = m.distributions
    relaxed = [D.RelaxedOneHotCategorical(0.2, probs=probs), D.RelaxedBernoulli(0.2, probs=probs)]
    return [(d.temperature, logits / d.temperature) for d in relaxed]


@pytest.mark.parametrize("spec", FAST)
def test_relaxed_distributions_keep_a_number_temperature_as_torch(spec: str) -> None:
    same(_relaxed_temperatures, spec, decimals=None)


def _float_grid_hits(m: Any) -> Any:
    """A float64 grid by ``arange`` with an inexact step, compared exactly with a value it
    holds (the first three points: torch's kernel computes ``start + i * step`` for them on
    every machine, whatever its vector width)."""
    grid = m.arange(0.1, 0.6, 0.2, dtype=m.float64)
    return grid, (grid == 0.5).any().item()


@pytest.mark.parametrize("spec", FAST)
def test_float64_arange_points_as_torch(spec: str) -> None:
    same(_float_grid_hits, spec, decimals=None)


def _with_a_tensor_lr(name: str) -> Callable[[Any], Any]:
    """A few steps of the optimizer ``name`` on float64 parameters with its learning rate
    given as a (float32) tensor, as torch's docs suggest for compiled steps; foreach=False
    is torch's CPU default path."""

    def program(m: Any) -> Any:
        w = m.tensor([0.3, -0.2], dtype=m.float64, requires_grad=True)
        optimizer = getattr(m.optim, name)([w], lr=m.tensor(0.1), foreach=False)
        for _ in range(2):
            optimizer.zero_grad()
            (w * m.tensor([1.0, 2.0], dtype=m.float64)).pow(2).sum().backward()
            optimizer.step()
        return w

    return program


TENSOR_LR_STEPS = {name: _with_a_tensor_lr(name) for name in ("Adam", "AdamW", "NAdam", "Adamax")}


@pytest.mark.parametrize("spec", FAST)
def test_tensor_lr_rounds_the_step_as_torch(spec: str) -> None:
    same_each(TENSOR_LR_STEPS, spec, decimals=None)


def _legacy_constructor_of_a_tensor(m: Any) -> Any:
    """``torch.Tensor(t)`` of a float64 tensor (old scripts wrap arrays and tensors alike)."""
    t = m.tensor([1.5, 2.0], dtype=m.float64)
    alias = m.Tensor(t)
    alias[0] = 7.0  # an alias: the write shows in t
    g = m.tensor([1.5], dtype=m.float64, requires_grad=True)
    return alias.dtype, t, m.Tensor(g).requires_grad, m.Tensor(m.tensor([1, 2])).dtype


@pytest.mark.parametrize("spec", FAST)
def test_legacy_constructor_of_a_tensor_is_its_alias_as_torch(spec: str) -> None:
    same(_legacy_constructor_of_a_tensor, spec, decimals=None)


def _storages(m: Any) -> Any:
    x = m.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (storage() is deprecated in both)
        typed = x.storage()
    made = (x.untyped_storage(), typed, x, typed.untyped())
    return [m.is_storage(s) for s in made], [
        (isinstance(s, m.UntypedStorage), isinstance(s, m.TypedStorage)) for s in made
    ]


@pytest.mark.parametrize("spec", FAST)
def test_is_storage_as_torch(spec: str) -> None:
    same(_storages, spec)


def _float32_running_sum(m: Any) -> Any:
    """A float32 running sum (a CDF of float32 weights, as NeRF's sample_pdf builds)."""
    return m.cumsum(m.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), 0)


def _float32_running_product(m: Any) -> Any:
    """A float32 running product (a transmittance, as volume rendering's cumprod)."""
    return m.cumprod(m.tensor([1.1, 1.3, 0.7, 1.9, 1.7, 0.3, 2.3, 1.1]), 0)


@pytest.mark.parametrize("spec", FAST)
def test_float32_cumsum_accumulates_as_torch(spec: str) -> None:
    same(_float32_running_sum, spec, decimals=None)


@pytest.mark.parametrize("spec", FAST)
def test_float32_cumprod_accumulates_as_torch(spec: str) -> None:
    same(_float32_running_product, spec, decimals=None)
