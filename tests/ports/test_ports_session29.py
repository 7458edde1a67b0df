"""Ten more real programs, of kinds the ports had not met, in float64 so that every number they
return must agree with torch's to ~1e-9: a batched BiLSTM-CRF tagger, constrained weights by
``nn.utils.parametrize`` in an orthogonal RNN, a ``torch.utils.data`` pipeline for an
imbalanced task, a fine-tuning loop with gradient accumulation, warm-up, GradScaler and an EMA
model, einsum-written attention, Mixup/CutMix, Hessian-free training with forward-mode AD,
model surgery with activation checkpointing and Grad-CAM, graph pooling by
``scatter_reduce``/``index_add_`` and learning-to-rank losses; then the cases the session's
fixes turned from strict xfails into passes (a tensor learning rate and tensor betas,
``is_storage``) and what is left recorded (``np.asarray`` of what ``numpy()`` refuses).

Each port runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (port_harness).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from port_harness import Port, port_params
from snippet_outcomes import same, same_each
from tw_backends import FAST

EXACT = {"rtol": 1e-9, "atol": 1e-12}

CASES = {
    # Embedding(padding_idx), pack_padded_sequence(enforce_sorted=False) through a
    # bidirectional LSTM, pad_packed_sequence(total_length), transitions written by .data,
    # logsumexp forward algorithm with torch.where masking, gather and tag-pair advanced
    # indexing for the gold score, Viterbi by max/back-pointers/gather, SGD(weight_decay),
    # clip_grad_norm_.
    "bilstm-crf": Port("bilstm_crf", **EXACT),
    # register_parametrization (Symmetric, Skew + matrix_exp stacked, a right_inverse
    # assignment), parametrize.cached(), parametrizations.orthogonal on RNNCell.weight_hh
    # (default map; cayley), RMSprop, remove_parametrizations(leave_parametrized=True/False).
    "parametrized-rnn": Port("parametrized_rnn", **EXACT),
    "parametrized-rnn-cayley": Port("parametrized_rnn", ("--map", "cayley"), **EXACT),
    # Dataset of dicts, random_split by fractions, Subset, ConcatDataset with a TensorDataset
    # subclass, bincount class weights into WeightedRandomSampler, collate_fn with
    # pad_sequence, drop_last, BatchSampler(SequentialSampler), IterableDataset with
    # get_worker_info, Adagrad(lr_decay), weighted cross entropy.
    "data-pipeline": Port("data_pipeline", **EXACT),
    # No-decay parameter groups by name, AdamW, LambdaLR warm-up + cosine, accumulation,
    # GradScaler("cpu") with an overflow skipped and backed off, unscale_ + clip_grad_norm_,
    # AveragedModel(multi_avg_fn=get_ema_multi_avg_fn), zero_grad(set_to_none=True).
    "accumulate-warmup": Port("accumulate_warmup", **EXACT),
    # einsum scores/values/linear attention (ellipsis), relative position bias embedding,
    # masked_fill(-finfo.max), latents repeated over the batch, bilinear einsum beside
    # nn.Bilinear, cross_entropy(label_smoothing), Adam(amsgrad).
    "einsum-attention": Port("einsum_attention", **EXACT),
    # np.random Beta draws, randperm partners, CutMix boxes by sliced assignment, one-hot
    # soft targets, flips by torch.where, torch.roll, BatchNorm2d, SGD(nesterov) + MultiStepLR.
    "mixup-cutmix": Port("mixup_cutmix", **EXACT),
    # parameters_to_vector/vector_to_parameters, functional_call, hvp and double backward,
    # forward-mode AD (dual_level/make_dual/unpack_dual) + functional.vjp Gauss-Newton
    # products in CG, functional.jacobian/hessian, a Function with jvp/save_for_forward,
    # set_materialize_grads(False) and needs_input_grad.
    "hessian-free": Port("hessian_free", **EXACT),
    # setattr head replacement, load_state_dict(strict=False) keys, requires_grad_ freezing,
    # add_param_group, checkpoint/checkpoint_sequential(use_reentrant=False), Grad-CAM by
    # forward hook + full backward hook + tensor hook, bilinear interpolate.
    "gradcam-surgery": Port("gradcam_surgery", **EXACT),
    # repeat_interleave batches, unique(dim=1) edges, bincount degrees, index_add_,
    # scatter_reduce(amax/mean, include_self), segment softmax, unique(return_inverse,
    # return_counts), cdist + topk(largest=False), farthest-point sampling, clip_grad_value_.
    "graph-pooling": Port("graph_pooling", **EXACT),
    # combinations pairs, MarginRankingLoss, BCE-with-logits(weight, pos_weight), ListNet and
    # KLDivLoss(log_target), NDCG by sort/gather/log2, TripletMarginWithDistanceLoss(swap),
    # CosineEmbeddingLoss, HingeEmbeddingLoss, MultiLabelSoftMarginLoss(weight),
    # PoissonNLLLoss(full), GaussianNLLLoss.
    "learning-to-rank": Port("learning_to_rank", **EXACT),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_matches_pytorch_in_float64(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)


# -- a tensor learning rate: the step's arithmetic in the lr's dtype, as torch -------------


def _steps_with_a_tensor_lr(name: str, lr: Callable[[Any], Any], **options: Any) -> Any:
    """Three steps of the optimizer ``name`` on float64 parameters with the learning rate
    ``lr(m)`` (a tensor): torch's single-tensor steps compute with it as a 0-d tensor."""

    def program(m: Any) -> Any:
        w = m.tensor([[0.3, -0.2], [0.5, 0.1]], dtype=m.float64, requires_grad=True)
        optimizer = getattr(m.optim, name)([w], lr=lr(m), **options)
        for _ in range(3):
            optimizer.zero_grad()
            (w * m.tensor([1.0, 2.0], dtype=m.float64)).pow(2).sum().backward()
            optimizer.step()
        return w, optimizer.param_groups[0]["lr"]

    return program


def _float32_lr(m: Any) -> Any:
    return m.tensor(0.1)


TENSOR_LR_OPTIONS = {
    "adam-weight-decay": _steps_with_a_tensor_lr("Adam", _float32_lr, weight_decay=0.1),
    "adam-amsgrad-maximize": _steps_with_a_tensor_lr(
        "Adam", _float32_lr, amsgrad=True, maximize=True
    ),
    "adam-foreach-default": _steps_with_a_tensor_lr("Adam", _float32_lr),
    "adam-one-element-lr": _steps_with_a_tensor_lr("Adam", lambda m: m.tensor([0.1])),
    "adam-float64-lr": _steps_with_a_tensor_lr("Adam", lambda m: m.tensor(0.1, dtype=m.float64)),
    "adamw-amsgrad": _steps_with_a_tensor_lr("AdamW", _float32_lr, amsgrad=True, foreach=False),
    "nadam-decoupled": _steps_with_a_tensor_lr(
        "NAdam", _float32_lr, decoupled_weight_decay=True, weight_decay=0.1, foreach=False
    ),
    "radam-decoupled": _steps_with_a_tensor_lr(
        "RAdam", _float32_lr, decoupled_weight_decay=True, weight_decay=0.1, foreach=False
    ),
    "adagrad-lr-decay": _steps_with_a_tensor_lr("Adagrad", _float32_lr, lr_decay=0.3),
    "asgd": _steps_with_a_tensor_lr("ASGD", _float32_lr, t0=1, foreach=False),
    "adafactor": _steps_with_a_tensor_lr("Adafactor", _float32_lr, weight_decay=0.1),
}


@pytest.mark.parametrize("spec", FAST)
def test_tensor_lr_steps_in_the_lr_dtype_as_torch(spec: str) -> None:
    # (12 decimals: a float32-rounded step moves these parameters by ~1e-9, while torch's
    # lerp_ kernel rounds once by a fused multiply-add where NumPy rounds twice: 1 ulp)
    same_each(TENSOR_LR_OPTIONS, spec, decimals=12)


def _asgd_eta_with_a_tensor_lr(m: Any) -> Any:
    """ASGD's eta state after each step with a float32 tensor lr (computed in float32)."""
    w = m.tensor([0.3, -0.2], dtype=m.float64, requires_grad=True)
    optimizer = m.optim.ASGD([w], lr=m.tensor(0.1), t0=1, foreach=False)
    etas = []
    for _ in range(3):
        optimizer.zero_grad()
        (w * 2).pow(2).sum().backward()
        optimizer.step()
        etas.append(optimizer.state[w]["eta"].clone())
    return etas


@pytest.mark.parametrize("spec", FAST)
def test_asgd_eta_of_a_tensor_lr_as_torch(spec: str) -> None:
    same(_asgd_eta_with_a_tensor_lr, spec, decimals=None)


def _with_tensor_betas(name: str) -> Callable[[Any], Any]:
    """Four steps with betas given as (float32) tensors: torch's single-tensor steps form
    ``1 - beta``, ``beta ** step`` and the step size with them as 0-d float32 tensors (Adam
    casts beta1 to the parameter's dtype for ``lerp_`` alone)."""

    def program(m: Any) -> Any:
        w = m.tensor([[0.3, -0.2], [0.5, 0.1]], dtype=m.float64, requires_grad=True)
        betas = (m.tensor(0.9), m.tensor(0.99))
        optimizer = getattr(m.optim, name)([w], lr=0.1, betas=betas, foreach=False)
        for _ in range(4):
            optimizer.zero_grad()
            (w * m.tensor([1.0, 2.0], dtype=m.float64)).pow(2).sum().backward()
            optimizer.step()
        return w

    return program


TENSOR_BETAS = {
    name: _with_tensor_betas(name) for name in ("Adam", "AdamW", "NAdam", "RAdam", "Adamax")
}


#: On NumPy, Adam's and AdamW's float32 ``bias_correction2 ** 0.5`` is a correctly rounded sqrt.
_TORCH_FLOAT32_SQRT = pytest.mark.xfail(
    strict=True,
    reason="SILENT: torch's float32 sqrt on this CPU (pow(t, 0.5) is its sqrt_kernel) is not "
    "correctly rounded, even for a 0-d tensor: (1 - tensor(0.999) ** 4) ** 0.5 is "
    "0.0631975308 there, 0.0631975383 (correctly rounded) in tw, so Adam/AdamW steps with "
    "tensor betas differ by ~1e-7 relative on numpy (NAdam/RAdam/Adamax match since the "
    "numpy pow of session 30); fix: the numpy backend's float32 sqrt as torch's kernel "
    "computes it (tensorweaver_numpy/backend.py sqrt; its algorithm not yet known)",
)


@pytest.mark.parametrize(
    "spec", [pytest.param(s, marks=[_TORCH_FLOAT32_SQRT] if s == "numpy" else []) for s in FAST]
)
def test_tensor_betas_step_in_float32_as_torch(spec: str) -> None:
    same_each(TENSOR_BETAS, spec, decimals=12)


@pytest.mark.parametrize("spec", FAST)
def test_float32_scalar_power_as_torch(spec: str) -> None:
    same(lambda m: [m.tensor(0.9) ** k for k in (4.0, 5.0, 6.0, 2.5)], spec, decimals=None)


# -- np.asarray of what numpy() refuses: refused, with a dtype or a copy too (not yet) -----


REFUSED_BY_NUMPY = {
    "requires-grad-dtype": lambda m: np.asarray(
        m.tensor([1.0, 2.0], requires_grad=True), dtype=np.float64
    ),
    "requires-grad-np-array": lambda m: np.array(m.tensor([1.0, 2.0], requires_grad=True)),
    "requires-grad-copy": lambda m: np.asarray(m.tensor([1.0], requires_grad=True), copy=True),
    "non-leaf": lambda m: np.asarray(m.tensor([1.0, 2.0], requires_grad=True) * 2),
    "a-numpy-function": lambda m: np.isclose(m.tensor([1.0, 2.0], requires_grad=True), 1.0),
    "a-list-of-them": lambda m: np.array([m.tensor(1.0, requires_grad=True)] * 2),
    "conjugate-bit-dtype": lambda m: np.asarray(m.tensor([1 + 2j]).conj(), dtype=np.complex128),
    "negative-bit-copy": lambda m: np.array(m.tensor([1 + 2j]).conj().imag, copy=True),
}


@pytest.mark.parametrize("spec", FAST)
def test_numpy_arrays_of_what_numpy_refuses_are_refused_as_torch(spec: str) -> None:
    same_each(REFUSED_BY_NUMPY, spec)


def _under_no_grad(m: Any) -> Any:
    t = m.tensor([1.0, 2.0], requires_grad=True)
    with m.no_grad():
        return np.asarray(t * 2).tolist(), np.asarray(t, dtype=np.float64).tolist()


def _library_reads_of_conjugates(m: Any) -> Any:
    """The library's own reads of a conjugate view (saving it, comparing it) still work."""
    z = m.tensor([1 + 2j, 3 - 1j]).conj()
    m.testing.assert_close(z, z.resolve_conj())
    buffer = io.BytesIO()
    m.save({"z": z, "w": m.tensor([1.0], requires_grad=True)}, buffer)
    buffer.seek(0)
    loaded = m.load(buffer)
    return loaded["z"], loaded["w"], str(z)


ALLOWED = {"under-no-grad": _under_no_grad, "library-reads": _library_reads_of_conjugates}


@pytest.mark.parametrize("spec", FAST)
def test_numpy_arrays_allowed_as_torch(spec: str) -> None:
    same_each(ALLOWED, spec)


# -- is_storage ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", FAST)
def test_is_storage_of_what_is_no_storage_as_torch(spec: str) -> None:
    same(lambda m: [m.is_storage(x) for x in (m.ones(2), np.ones(2), 1.0, None, [1])], spec)
