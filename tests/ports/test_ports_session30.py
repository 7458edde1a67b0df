"""Twelve more real programs, of kinds the ports had not met: optimizers written as
``torch.optim.Optimizer`` subclasses (Lion in a Lookahead that never calls
``Optimizer.__init__``, optimizer-in-backward hooks, scheduler combinations), survival
analysis and quantile regression (``logcumsumexp``, ``quantile``/``bucketize``/``histc``),
a Gumbel-softmax categorical VAE with the discrete distributions, hand-written
quantization-aware training with integer dtypes, ``unfold``/``fold`` patch models, a
full-covariance Gaussian head with Kronecker/block-diagonal layers, lazy modules with
keyword hooks and a hypernetwork through ``functional_call``, an activation and loss sweep,
a bucketing text-CNN data pipeline, a complex-valued network, a LLaMA-style decoder with
rotary embeddings and KV-cached generation, and saved-tensor hooks with gradient
inspection; then the case the session's fix turned into a pass (an optimizer subclass
whose ``__init__`` skips ``Optimizer.__init__``).

Each port runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (port_harness).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import pytest
from port_harness import Port, port_params
from snippet_outcomes import same, same_each
from tw_backends import FAST

EXACT = {"rtol": 1e-9, "atol": 1e-12}

CASES = {
    # Optimizer subclasses (Lion; Lookahead without Optimizer.__init__, its state dict into
    # fresh objects), step pre/post hooks, register_post_accumulate_grad_hook per-parameter
    # SGD, SequentialLR(LinearLR, CosineAnnealingLR), ChainedScheduler(ExponentialLR,
    # PolynomialLR), CyclicLR(triangular2) with momentum cycling.
    "custom-optimizer": Port("custom_optimizer", **EXACT),
    # nanmedian/nanquantile scaling, std_mean/var_mean/aminmax, quantile + bucketize bins,
    # Cox loss by stable argsort + logcumsumexp, concordance, Kaplan-Meier by unique/
    # searchsorted/cumprod + trapezoid, pinball loss, cummax, histc, median(dim), one_hot.
    "survival-quantile": Port("survival_quantile", **EXACT),
    # Gumbel noise from rand, straight-through scatter_, kl_divergence(Categorical),
    # OneHotCategorical, RelaxedOneHotCategorical, Beta, LogNormal, Gumbel, Binomial,
    # Poisson, Dirichlet regression with its KL.
    "gumbel-discrete": Port("gumbel_discrete", **EXACT),
    # float32: fake quantization by round/clamp + STE, aminmax per-channel scales, observer
    # lerp_, uint8/int8 casts, int32 matmul, half() round trip, integer // % >> &.
    "quantized-training": Port("quantized_training", rtol=1e-5, atol=1e-6),
    # F.unfold convolution vs conv2d, nn.Unfold/nn.Fold patch denoiser, ZeroPad2d,
    # Tensor.unfold frames + F.fold overlap-add, ConvTranspose1d(output_padding) after
    # Unflatten, gated CNN LM with GLU and causal F.pad.
    "patch-fold": Port("patch_fold", **EXACT),
    # tril_indices + diag_embed Cholesky, MultivariateNormal(scale_tril) vs solve_triangular,
    # triu_indices, kron / block_diag / ParameterList, einsum identity, cartesian_prod,
    # addmm/baddbmm/tensordot/outer, AdamW + CosineAnnealingLR.
    "structured-gaussian": Port("structured_gaussian", **EXACT),
    # LazyConv1d/LazyBatchNorm1d/LazyLinear, ParameterDict FiLM, forward pre/post hooks
    # with_kwargs, full backward pre-hook, functional_call with hypernetwork weights,
    # get_parameter/get_submodule.
    "lazy-hypernet": Port("lazy_hypernet", **EXACT),
    # 17 activation modules (RReLU in eval) and 13 functional losses with ignore_index,
    # class weights, batchmean KL, multilabel margin targets, Softmin/Softmax2d heads.
    "activation-zoo": Port("activation_zoo", **EXACT),
    # Sampler subclass as batch_sampler, pad_sequence(padding_side="left"), default_collate
    # of dicts, namedtuple items, StackDataset, ChainDataset, Embedding.from_pretrained
    # (freeze, padding_idx), F.embedding(max_norm), AdaptiveMaxPool1d, unpad_sequence,
    # Adadelta + ReduceLROnPlateau.
    "bucket-textcnn": Port("bucket_textcnn", **EXACT),
    # cdouble parameters, complex matmul, polar/angle modReLU, cardioid, complex norm,
    # view_as_complex/view_as_real, vdot, sgn, Adam and SGD(momentum) on complex
    # parameters, clip_grad_norm_ over complex gradients.
    "complex-valued": Port("complex_valued", rtol=1e-9, atol=1e-11),
    # float32: RMSNorm, rotary embeddings by polar/view_as_complex/view_as_real, GQA by
    # repeat_kv (or SDPA enable_gqa), a KV cache of plain tensor attributes written by slice
    # assignment, hstack-ed causal mask, SwiGLU, inference_mode generation with top-p
    # sampling (sort, cumsum, masked zeroing, div_, multinomial, gather) and early stop.
    "llama-inference": Port("llama_inference", rtol=1e-5, atol=1e-6),
    "llama-inference-sdpa": Port("llama_inference", ("--sdpa",), rtol=1e-5, atol=1e-6),
    # saved_tensors_hooks (to NumPy and back; into a dict), save_on_cpu,
    # disable_saved_tensors_hooks, Tensor.register_hook + retain_grad, grad_fn prehook/hook,
    # register_multi_grad_hook (all/any), post-accumulate grad-norm log, RMSprop(centered,
    # momentum), Rprop.
    "memory-saving": Port("memory_saving", **EXACT),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_matches_pytorch(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)


# -- an Optimizer subclass that never calls Optimizer.__init__ (timm's Lookahead) ------------


def _wrapper_without_optimizer_init(m: Any) -> Any:
    """A wrapper optimizer whose ``__init__`` skips ``Optimizer.__init__`` steps its inner
    optimizer: torch hooks no step of such a class, while the inner optimizer's step runs
    the global step hooks."""

    class Wrapper(m.optim.Optimizer):
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.param_groups, self.defaults, self.state = inner.param_groups, inner.defaults, {}

        def zero_grad(self, set_to_none: bool = True) -> None:
            self.inner.zero_grad(set_to_none=set_to_none)

        def step(self, closure: Any = None) -> Any:
            return self.inner.step(closure)

    w = m.tensor([1.0, -2.0], requires_grad=True)
    optimizer = Wrapper(m.optim.SGD([w], lr=0.1))
    seen = []
    hooks = importlib.import_module(f"{m.__name__}.optim.optimizer")
    handle = hooks.register_optimizer_step_pre_hook(
        lambda o, args, kwargs: seen.append(type(o).__name__)
    )
    try:
        for _ in range(2):
            optimizer.zero_grad()
            (w * w).sum().backward()
            optimizer.step()
    finally:
        handle.remove()
    return w, seen


@pytest.mark.parametrize("spec", FAST)
def test_optimizer_subclass_without_optimizer_init_steps_as_torch(spec: str) -> None:
    same(_wrapper_without_optimizer_init, spec)


# -- transforms whose domain and codomain have different event dims --------------------------


def _composed(parts: Callable[[Any], list], shape: tuple) -> Callable[[Any], Any]:
    """A ``ComposeTransform`` of ``parts(transforms)`` on a grid of ``shape``: its output,
    log-determinant (and its gradient), event dims and inverse."""

    def program(m: Any) -> Any:
        transforms = m.distributions.transforms
        t = transforms.ComposeTransform(parts(transforms))
        x = m.linspace(-0.9, 0.8, math.prod(shape), dtype=m.float64).reshape(shape)
        x.requires_grad_()
        y = t(x)
        ladj = t.log_abs_det_jacobian(x, y)
        (ladj * m.arange(1.0, ladj.numel() + 1, dtype=m.float64).view(ladj.shape)).sum().backward()
        return y, ladj, x.grad, t.domain.event_dim, t.codomain.event_dim, t.inv(y)

    return program


SHAPE_CHANGING_COMPOSITIONS = {
    "reshape-then-exp": _composed(
        lambda T: [T.ReshapeTransform((2, 3), (6,)), T.ExpTransform()], (4, 2, 3)
    ),
    "exp-then-reshape": _composed(
        lambda T: [T.ExpTransform(), T.ReshapeTransform((2, 3), (6,))], (4, 2, 3)
    ),
    "corr-cholesky-then-affine": _composed(
        lambda T: [T.CorrCholeskyTransform(), T.AffineTransform(0.0, 2.0)], (2, 3)
    ),
    "affine-then-corr-cholesky": _composed(
        lambda T: [T.AffineTransform(0.0, 0.5), T.CorrCholeskyTransform()], (2, 3)
    ),
    "stick-breaking-then-exp": _composed(
        lambda T: [T.StickBreakingTransform(), T.ExpTransform()], (2, 3)
    ),
}


@pytest.mark.parametrize("spec", FAST)
def test_composed_log_det_over_changing_event_dims_as_torch(spec: str) -> None:
    # (was: a reshape then an elementwise part summed every row's terms into each row; a
    # Cholesky factor then an elementwise part raised RuntimeError)
    same_each(SHAPE_CHANGING_COMPOSITIONS, spec, decimals=10)


def _event_dims_of_shape_changing_transforms(m: Any) -> Any:
    transforms = m.distributions.transforms
    return [
        transforms.CorrCholeskyTransform().event_dim,
        transforms.ReshapeTransform((2, 3), (6,)).event_dim,
    ]


@pytest.mark.parametrize("spec", FAST)
def test_event_dim_of_shape_changing_transforms_refused_as_torch(spec: str) -> None:
    same(_event_dims_of_shape_changing_transforms, spec)
