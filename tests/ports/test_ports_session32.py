"""Twelve more real programs, of kinds the ports had not met, in float64: a spiking network
trained through a surrogate-gradient ``autograd.Function``, a Neural Turing Machine's
content/shift addressing and erase/add memory, evolution strategies through
``parameters_to_vector``/``vector_to_parameters``, domain-adversarial training with a
gradient reversal layer, prototypical few-shot episodes, a rational-quadratic neural spline
flow (``searchsorted``/``gather``, orthogonal mixing by ``parametrizations.orthogonal``),
Gaussian-mixture EM and its gradient fit through ``MixtureSameFamily(MultivariateNormal)``,
a one-stage detector (anchors, IoU matching, focal loss, hand-written NMS), elastic weight
consolidation, TabNet's sparsemax and ghost batch norm, FixMatch with an EMA teacher, and a
SIREN fitted to image gradients (second-order backward). Then what a user
sees of such programs besides their numbers (printed models and optimizers, the classes of
the errors their typical mistakes raise), and the defects they found: one fixed, one a strict
xfail naming its cause and fix.

Each port runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (port_harness).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from port_harness import Port, port_params
from snippet_outcomes import same, same_each
from tw_backends import FAST

EXACT = {"rtol": 1e-9, "atol": 1e-12}
#: A convolution's bias before BatchNorm has a gradient of pure rounding (the norm removes
#: it), which Adam scales up to ~1e-12 steps: the running means, and the eval-mode distances
#: read through them, follow the order of the sums in their ~10th digit.
CLOSE = {"rtol": 1e-7, "atol": 1e-10}

CASES = {
    # autograd.Function Heaviside forward / fast-sigmoid backward from save_for_backward,
    # LIF loop with detached reset, rand < p rate coding cast by .to(dtype), torch.stack
    # records, one_hot().logical_not() mask, clamp/mul/pow penalty, clip_grad_norm_.
    "spiking-snn": Port("spiking_snn", **EXACT),
    # LSTMCell controller, split/softplus/sigmoid head parameters, cosine_similarity of
    # expand_as keys, grouped conv1d circular shift, w ** gamma sharpening, erase/add outer
    # products by matmul of unsqueezes, bmm reads, uniform_ buffer, RMSprop(momentum),
    # clip_grad_value_.
    "ntm-copy": Port("ntm_copy", **EXACT),
    # parameters_to_vector, antithetic randn population written by vector_to_parameters
    # (also into p.grad), no_grad episodes, argsort().argsort() ranks, Adam(weight_decay).
    "evolution-strategies": Port("evolution_strategies", **EXACT),
    # Function returning x.view_as(x) with a non-tensor coefficient on ctx (and the same
    # reversal by register_hook), Conv1d/BatchNorm1d/MaxPool1d/Dropout features, add_module
    # heads with LogSoftmax + NLLLoss, BCEWithLogitsLoss, SGD param groups' lr rewritten.
    "dann-grl": Port("dann_grl", **EXACT),
    "dann-grl-hook": Port("dann_grl", ("--grl", "hook"), **EXACT),
    # randperm episodes, eq().nonzero() support/query split, unique, prototypes by mean(0),
    # broadcast squared distances, log_softmax(-d).gather, max(2) accuracy, StepLR.
    "protonet": Port("protonet", **CLOSE),
    # softmax bin widths, cumsum + F.pad(value=), searchsorted(right=True) of batched knots,
    # gather, closed-form spline and its quadratic-root inverse, torch.where tails,
    # Independent(Normal) base, AdamW + CosineAnnealingLR; parametrizations.orthogonal
    # (matrix_exp: PyTorch's default for a square weight) between couplings.
    "spline-flow": Port("spline_flow", **EXACT),
    "spline-flow-orthogonal": Port("spline_flow", ("--mixing", "matrix_exp"), **EXACT),
    # MultivariateNormal(covariance_matrix) log_prob batched over components, logsumexp
    # responsibilities, einsum weighted covariances; MixtureSameFamily(Categorical,
    # MultivariateNormal(scale_tril / precision_matrix)) fitted by Adam, mean/variance.
    "gmm-em": Port("gmm_em", **EXACT),
    "gmm-em-precision": Port("gmm_em", ("--param", "precision"), **EXACT),
    # meshgrid anchors, broadcast IoU, max/argmax matching with boolean index writes,
    # log-ratio box encoding by new_tensor, focal loss from BCE-with-logits(reduction=none),
    # smooth_l1_loss(beta=1/9), sigmoid-score threshold + sort + while-loop NMS.
    "focal-detector": Port("focal_detector", **EXACT),
    # deepcopy of a parameter dict, Fisher by per-sample backward into p.data.zero_() dicts,
    # EWC penalty, load_state_dict(deepcopy(state_dict())), Dropout train/eval, split batches.
    "ewc-continual": Port("ewc_continual", **EXACT),
    # sparsemax Function (sort descending, cumsum, arange view/transpose, gather tau, in-place
    # /= and -= on its input, masked backward), ghost batch norm by chunk, F.glu, attentive
    # priors, ExponentialLR, clip_grad_norm_, running_var.
    "tabnet-sparsemax": Port("tabnet_sparsemax", **EXACT),
    # flip/roll weak and cutout strong augmentation, interleave by reshape/transpose,
    # softmax max + ge(threshold) mask, reduction="none" loss, nesterov SGD with name-chosen
    # groups, warm-up cosine LambdaLR, EMA through state_dict copy_.
    "fixmatch-ema": Port("fixmatch_ema", **EXACT),
    # sine layers with uniform_ init under no_grad, clone().detach().requires_grad_() inputs,
    # autograd.grad(create_graph=True) gradient loss (double backward through sin),
    # divergence loop Laplacian.
    "siren-poisson": Port("siren_poisson", **EXACT),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_matches_pytorch_in_float64(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)


# -- what a user sees of these programs besides their numbers --------------------------------


def _printed_models(m: Any) -> list[str]:
    """``print`` of the kinds of modules and optimizers these programs build: heads grown by
    ``add_module``, a parametrized layer, ``padding="same"`` circular convolutions, norms with
    their own momentum, an optimizer with groups and ``maximize``."""
    nn = m.nn
    head = nn.Sequential()
    head.add_module("c_fc1", nn.Linear(24, 10))
    head.add_module("c_relu1", nn.ReLU(True))
    head.add_module("c_softmax", nn.LogSoftmax(dim=1))
    mixing = nn.utils.parametrizations.orthogonal(nn.Linear(2, 2, bias=False))
    features = nn.Sequential(
        nn.Conv1d(2, 4, 3, padding="same", groups=2, padding_mode="circular"),
        nn.BatchNorm1d(4, momentum=0.02),
        nn.LeakyReLU(0.1, inplace=True),
        nn.MaxPool1d(2),
        nn.AdaptiveAvgPool2d(1),
        nn.LSTMCell(5, 7),
    )
    groups = [
        {"params": list(head.parameters())[:1], "weight_decay": 5e-4},
        {"params": list(head.parameters())[1:], "weight_decay": 0.0},
    ]
    shown = [repr(head), repr(mixing), repr(features), list(mixing.state_dict())]
    shown += [repr(m.optim.SGD(groups, lr=0.03, momentum=0.9, nesterov=True))]
    shown += [repr(m.optim.Adam(mixing.parameters(), lr=0.03, maximize=True))]
    shown += [repr(m.optim.RMSprop(features.parameters(), lr=1e-3, momentum=0.9, alpha=0.95))]
    # (tensorweaver names its own module in sizes: not what is compared here)
    return [str(s).replace("tensorweaver", "torch") for s in shown]


@pytest.mark.parametrize("spec", FAST)
def test_printed_models_as_torch(spec: str) -> None:
    same(_printed_models, spec)


def _surrogate(m: Any, grads: Callable) -> Any:
    class Spike(m.autograd.Function):
        @staticmethod
        def forward(ctx, mem, slope):
            ctx.save_for_backward(mem)
            return (mem > 0).to(mem.dtype)

        @staticmethod
        def backward(ctx, grad_output):
            return grads(ctx, grad_output)

    x = m.ones(2, 3, requires_grad=True)
    Spike.apply(x, 25.0).sum().backward()
    return x.grad


def _deepcopy_after_forward(m: Any) -> Any:
    class Cell(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = m.nn.Linear(2, 2)

        def forward(self, x: Any) -> Any:
            self.memory = self.fc(x)  # a non-leaf kept on the module
            return self.memory

    cell = Cell()
    cell(m.ones(1, 2))
    return copy.deepcopy(cell)  # (an EMA teacher made after a forward)


def _grad_twice(m: Any) -> Any:
    x = m.ones(2, requires_grad=True)
    y = (x * x).sum()
    m.autograd.grad(y, x, create_graph=False)
    return m.autograd.grad(y, x)


def _orthogonal_assigned(m: Any, value: list) -> Any:
    layer = m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2, bias=False))
    layer.weight = m.tensor(value)
    return layer.weight


def _nms_of_no_candidates(m: Any) -> Any:
    scores = m.tensor([0.001, 0.002])
    boxes = m.zeros(2, 4)[scores > 0.5]
    return m.zeros(0, boxes.size(0)).max(dim=1)


#: Mistakes a user of these programs makes: each raises torch's class of error.
USER_ERRORS = {
    "function-too-few-gradients": lambda m: _surrogate(m, lambda ctx, g: g),
    "function-gradient-shape": lambda m: _surrogate(m, lambda ctx, g: (g.sum(0), None)),
    "deepcopy-module-holding-a-non-leaf": _deepcopy_after_forward,
    "ghost-batch-of-one": lambda m: m.nn.BatchNorm1d(3)(m.ones(5, 3)[4:]),
    "grad-twice": _grad_twice,
    "grad-of-unused-input": lambda m: m.autograd.grad(
        (m.ones(2, requires_grad=True) * 2).sum(), [m.ones(2, requires_grad=True)]
    ),
    "grad-without-grad-outputs": lambda m: m.autograd.grad(
        m.ones(2, requires_grad=True) * 2, m.ones(2, requires_grad=True)
    ),
    "one-hot-of-ignored": lambda m: m.nn.functional.one_hot(m.tensor([-1, 0]), 3),
    "one-hot-too-few-classes": lambda m: m.nn.functional.one_hot(m.tensor([3, 0]), 3),
    "one-hot-of-floats": lambda m: m.nn.functional.one_hot(m.tensor([1.0]), 3),
    "smooth-l1-negative-beta": lambda m: m.nn.functional.smooth_l1_loss(
        m.zeros(2), m.ones(2), beta=-1.0
    ),
    "bce-logits-shape": lambda m: m.nn.functional.binary_cross_entropy_with_logits(
        m.zeros(8, 1), m.zeros(8)
    ),
    "searchsorted-leading-dims": lambda m: m.searchsorted(
        m.tensor([[0.0, 1.0]]), m.tensor([[0.5], [0.2]])
    ),
    "mvn-not-positive-definite": lambda m: m.distributions.MultivariateNormal(
        m.zeros(2), covariance_matrix=m.tensor([[1.0, 2.0], [2.0, 1.0]])
    ),
    "mvn-two-parametrisations": lambda m: m.distributions.MultivariateNormal(
        m.zeros(2), covariance_matrix=m.eye(2), scale_tril=m.eye(2)
    ),
    "mixture-component-count": lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(logits=m.zeros(3)),
        m.distributions.Normal(m.zeros(2), m.ones(2)),
    ),
    "mixture-of-normals-weights": lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Normal(m.zeros(2), m.ones(2)),
        m.distributions.Normal(m.zeros(2), m.ones(2)),
    ),
    "independent-too-many-dims": lambda m: m.distributions.Independent(
        m.distributions.Normal(m.zeros(2), m.ones(2)), 2
    ),
    "vector-to-parameters-of-a-list": lambda m: m.nn.utils.vector_to_parameters(
        [1.0], [m.nn.Parameter(m.ones(1))]
    ),
    "vector-to-parameters-too-short": lambda m: m.nn.utils.vector_to_parameters(
        m.zeros(2), [m.nn.Parameter(m.ones(3))]
    ),
    "lambda-lr-per-group-count": lambda m: m.optim.lr_scheduler.LambdaLR(
        m.optim.SGD([m.nn.Parameter(m.ones(1))], lr=0.1), [lambda e: 1.0, lambda e: 2.0]
    ),
    "nesterov-without-momentum": lambda m: m.optim.SGD(
        [m.nn.Parameter(m.ones(1))], lr=0.1, nesterov=True
    ),
    "optimizer-of-a-non-leaf": lambda m: m.optim.SGD([m.ones(1, requires_grad=True) * 2], lr=0.1),
    "optimizer-of-one-tensor": lambda m: m.optim.Adam(m.nn.Parameter(m.ones(1)), lr=0.1),
    "glu-odd-width": lambda m: m.nn.functional.glu(m.ones(2, 3)),
    "cosine-similarity-widths": lambda m: m.nn.functional.cosine_similarity(
        m.ones(2, 3), m.ones(2, 4)
    ),
    "grouped-conv1d-channels": lambda m: m.nn.functional.conv1d(
        m.ones(1, 3, 5), m.ones(3, 1, 3), groups=2
    ),
    "same-padding-with-stride": lambda m: m.nn.Conv1d(2, 4, 3, padding="same", stride=2),
    "orthogonal-unknown-map": lambda m: m.nn.utils.parametrizations.orthogonal(
        m.nn.Linear(2, 2), orthogonal_map="qr"
    ),
    "nms-of-no-candidates": _nms_of_no_candidates,
    "clip-non-finite-norm": lambda m: m.nn.utils.clip_grad_norm_(
        _with_grad(m, [float("nan"), 1.0]), 1.0, error_if_nonfinite=True
    ),
    "stack-of-no-spikes": lambda m: m.stack([]),
    "view-of-transposed-patches": lambda m: m.ones(2, 3).t().view(-1),
}


def _with_grad(m: Any, grad: list) -> list:
    p = m.nn.Parameter(m.zeros(len(grad)))
    p.grad = m.tensor(grad)
    return [p]


@pytest.mark.parametrize("spec", FAST)
def test_user_errors_raise_torch_classes(spec: str) -> None:
    same_each(USER_ERRORS, spec)


#: What these programs read besides their losses, beside each mistake's neighbour that works.
BEHAVIOURS = {
    "orthogonal-assigned": lambda m: _orthogonal_assigned(m, [[0.0, 1.0], [1.0, 0.0]]),
    "orthogonal-assigned-non-orthogonal": lambda m: _orthogonal_assigned(m, [[1.0, 1.0], [1, 0]]),
    "cayley-of-a-wide-weight": lambda m: _wide_orthogonal(m, "cayley"),
    "householder-of-a-wide-weight": lambda m: _wide_orthogonal(m, "householder"),
    "function-kwargs-and-view-result": lambda m: _reversal(m),
    "adam-maximize-amsgrad": lambda m: _adam_maximize(m),
    "boolean-index-matching": lambda m: _matching(m),
    "batched-knots": lambda m: m.searchsorted(
        m.tensor([[[-3.0, -1.0, 1.0, 3.0]], [[-3.0, 0.0, 2.0, 3.0]]]),
        m.tensor([[[1.0]], [[3.0]]]),
        right=True,
    ),
    "mixture-moments": lambda m: _mixture_moments(m),
}


def _wide_orthogonal(m: Any, orthogonal_map: str) -> Any:
    layer = m.nn.Linear(3, 2, bias=False, dtype=m.float64)
    with m.no_grad():
        layer.weight.copy_(m.arange(6.0).view(2, 3) / 10 - 0.2)
    m.nn.utils.parametrizations.orthogonal(layer, orthogonal_map=orthogonal_map)
    return layer.weight, layer.weight @ layer.weight.T


def _reversal(m: Any) -> Any:
    class Reverse(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha=1.0):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.neg() * ctx.alpha, None

    x = m.ones(2, requires_grad=True)
    y = Reverse.apply(x * 1, alpha=0.5)
    z = y * 3
    z.sum().backward()
    return x.grad, y.grad_fn.name(), type(y.grad_fn).__name__


def _adam_maximize(m: Any) -> Any:
    p = m.nn.Parameter(m.tensor([1.0, -2.0], dtype=m.float64))
    opt = m.optim.Adam([p], lr=0.1, maximize=True, weight_decay=0.1, amsgrad=True)
    for _ in range(3):
        opt.zero_grad()
        (-(p**2).sum()).backward()
        opt.step()
    return p, sorted(opt.state_dict()["param_groups"][0])


def _matching(m: Any) -> Any:
    targets = m.full((4,), -1, dtype=m.long)
    best = m.tensor([0.1, 0.6, 0.3, 0.45])
    targets[best < 0.4] = 0
    positive = best >= 0.5
    forced = m.tensor([2])
    positive[forced] = True
    box = m.tensor([0, 0, 1, 1])
    box[forced] = m.arange(1)
    targets[positive] = m.tensor([5, 6])[box[positive]]
    return targets, positive


def _mixture_moments(m: Any) -> Any:
    D = m.distributions
    scale = m.tensor([[[1.0, 0.0], [0.5, 1.0]], [[2.0, 0.0], [0.0, 0.5]]], dtype=m.float64)
    loc = m.tensor([[0.0, 1.0], [2.0, 3.0]], dtype=m.float64)
    mix = D.MixtureSameFamily(
        D.Categorical(logits=m.tensor([0.0, 1.0], dtype=m.float64)),
        D.MultivariateNormal(loc, scale_tril=scale),
    )
    x = m.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, -1.0]], dtype=m.float64)
    return mix.batch_shape, mix.event_shape, mix.mean, mix.variance, mix.log_prob(x)


@pytest.mark.parametrize("spec", FAST)
def test_program_behaviours_as_torch(spec: str) -> None:
    same_each(BEHAVIOURS, spec)


def _mismatch_messages(m: Any) -> list:
    """The words of the error broadcasting tensors of mismatched shapes raises: PyTorch's
    names the pair that fails (folded from the left) and its last mismatched dimension."""

    def message(fn: Callable) -> str | None:
        try:
            fn()
        except RuntimeError as e:
            return str(e)
        return None

    shapes = [((2, 3), (2, 4)), ((5, 2, 3), (4, 3)), ((4, 3), (2, 1, 3), (5,))]
    shapes += [((2, 3, 1), (4, 5, 6)), ((0,), (2,))]
    out = [message(lambda s=s: m.broadcast_tensors(*(m.ones(x) for x in s))) for s in shapes]
    out.append(message(lambda: m.nn.functional.cosine_similarity(m.ones(2, 3), m.ones(2, 4))))
    out.append(message(lambda: m.distributions.Normal(m.zeros(2), m.ones(3))))
    return out


@pytest.mark.parametrize("spec", FAST)
def test_broadcast_mismatch_in_torch_words(spec: str) -> None:
    same(_mismatch_messages, spec)


# -- the defect these programs found -----------------------------------------------------------


def _view_bases(m: Any) -> tuple:
    x = m.ones(2, 3, requires_grad=True)
    y = x.view_as(x)
    row = y[0]
    with m.no_grad():
        t = x.t()
    copied = x * 1
    return (
        y._base is x,
        row._base is x,  # the root, not the view it was taken from
        t._base is x,
        x._base,
        copied._base,
        y._is_view(),
        copied._is_view(),
        x.detach()._is_view(),
        _dtype_view_bases(m),
    )


def _dtype_view_bases(m: Any) -> tuple:
    """A view(dtype) is no view for autograd (_base None) but the base of views of it."""
    a = m.ones(2, 3)
    bits = a.view(m.int32)
    row = bits[0]
    return (bits._base, row._base is bits, row[1:]._base is bits, a[0].view(m.int32)._base)


@pytest.mark.parametrize("spec", FAST)
def test_view_base_as_torch(spec: str) -> None:
    same(_view_bases, spec)
