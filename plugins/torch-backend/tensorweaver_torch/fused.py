"""Fused composites (see ``COMPOSITES`` in ``tensorweaver.contract.ir``) on torch kernels.

Each ``fused_<name>`` returns ``(output, saved)`` and ``fused_<name>_backward(saved,
grad_output, needs)`` returns one gradient per tensor input, in argument order (None
where ``needs`` wants none), computed by torch's own backward kernels (cuDNN
convolution, flash attention, ...). Two ways:

* The hot layers call those kernels directly: ``linear`` (two matrix products and a sum,
  the weight gradient in the weight's layout), ``conv2d``, ``conv3d`` and
  ``conv_transpose`` (``aten.convolution_backward``, bias included), ``max_pool2d``,
  ``max_pool`` and ``max_pool_with_indices`` (``aten.max_pool2d/3d_with_indices_backward``),
  ``avg_pool``
  (``aten.avg_pool2d/3d_backward``; torch has no 1-d pooling backward, so a 1-d pool runs
  as a 2-d one over a height of 1), ``layer_norm`` (``aten.native_layer_norm_backward``,
  affine map included), ``instance_norm`` (``aten.native_group_norm`` and its backward,
  one group per channel), ``relu`` (``aten.threshold_backward`` on the saved output),
  ``softmax`` and ``log_softmax`` (``aten._softmax_backward_data`` and its log twin on the
  saved output, as torch's own nodes call them), ``embedding``
  (``aten.embedding_dense_backward``) and ``cross_entropy`` of ``(N, C)`` logits
  (``aten._log_softmax`` and ``aten.nll_loss_forward``, and their backwards: at (256, 10)
  float32 forward and backward through the core took 1.3-1.4x torch's time against 2.0x
  recorded and replayed), ``scaled_dot_product_attention`` where torch would run its CPU
  flash kernel (:func:`_cpu_flash`); so do the optional ``nll_loss`` and
  ``nll_loss_backward``. The
  ATen ops are called as their ``.default`` overloads, which skips the overload packet's
  Python dispatch (~0.6 us a call).
  ``saved`` holds the tensors the kernel reads, nothing else, so an activation is freed as
  soon as nothing needs it. Measured against the recorded way below (one CPU thread, float32): a
  256x512x512 linear forward and backward 2.93 ms against 3.27 ms (autograd's weight
  gradient is a transposed view that then costs a copy), a 64x1x28x28 convolution with
  16 3x3 filters 5.6 ms against 6.0 ms.
* The others record torch's kernel with torch's autograd, on detached leaves of the
  inputs, and replay that small graph with ``torch.autograd.grad``: no private torch op
  is needed, at a fixed ~25 us a replay and ~6 us a recording (a softmax backward
  written with public ops costs 11 us at 16x16, but 154 us against the replay's 73 us at
  256x1024). The graph is kept (``retain_graph=True``) so that the core may run a
  backward twice; it is freed with ``saved``.

Random kernels that take no generator (dropout, the recurrent stack's dropout) would draw
from torch's global generator, which ``tw.manual_seed`` does not reach: they run on the
backend's own generator instead, whose state is lent to torch's default generator of the
device for the call (:func:`_lent`). Copying the state (16 bytes on CUDA, 5 KB on the CPU)
costs about 6 us a call; a 256x512 float32 dropout forward and backward through the core
takes about 2 ms on one CPU thread, the same with and without the loan within the noise of
interleaved runs. A thread that draws from torch's global generator during such a call
shares its stream.

Inputs that already require grad in torch's sense (a model run by ``tw.to_torch_module``)
are used as they are, so every kernel lands on torch's own tape.

Semantics follow torch: ``max_pool2d`` and ``max_pool`` pad with -inf and take ``padding``
at most half the kernel; ``causal`` attention masks with ``tril(ones(L, S))`` (aligned at
the top left when L != S).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

Tensor = torch.Tensor
aten = torch.ops.aten
Saved = tuple[object, list[Tensor]]

#: torch.autograd.grad takes a graph's output as a GradientEdge from torch 2.4 on: the saved
#: graph then does not keep the output's memory alive (a convolution's output is freed once
#: the activation after it has run). Older torch keeps the output tensor.
_OUTPUT_EDGES = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 4)


def _record(fn: Callable[..., Tensor], *inputs: Tensor | None) -> tuple[Tensor, Saved]:
    """``fn(*inputs)`` and what :func:`_replay` needs; an absent (None) input stays None."""
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in inputs):
        # The inputs are on torch's own tape (a model run through tw.to_torch_module): stay
        # on it, so torch's autograd differentiates through this kernel.
        out = fn(*inputs)
        return out, (out, list(inputs))
    leaves = [None if t is None else t.detach().requires_grad_() for t in inputs]
    with torch.enable_grad():
        out = fn(*leaves)
    edge = torch.autograd.graph.get_gradient_edge(out) if _OUTPUT_EDGES else out
    return out.detach(), (edge, leaves)


def _replay(saved: Saved, grad_output: Tensor, needs: tuple) -> tuple:
    out, leaves = saved
    wanted = [leaf for leaf, need in zip(leaves, needs) if need]
    found = iter(torch.autograd.grad(out, wanted, grad_output, retain_graph=True))
    return tuple(next(found) if need else None for need in needs)


class _FlashSaved(NamedTuple):
    """What torch's CPU flash-attention backward kernel reads: the inputs, the output, the
    rows' log-sum-exp, and the call's constants."""

    q: Tensor
    k: Tensor
    v: Tensor
    out: Tensor
    logsumexp: Tensor
    mask: Tensor | None
    causal: bool
    scale: float


def _cpu_flash(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool, scale: float
) -> bool:
    """Whether ``F.scaled_dot_product_attention`` would run torch's CPU flash kernel here
    (torch's own choice, ``sdpa_kernel`` settings included), with a float mask or none and
    off torch's tape: then that kernel and its backward are called directly, as torch's
    node calls them, bit for bit the same, without recording and replaying a graph
    (forward and backward of (4, 2, 20, 100) float32: 288 against 508 us, loaded machine).
    Not for empty operands: torch picks that kernel for zero heads, where it divides by
    zero (a SIGFPE); F.scaled_dot_product_attention returns at once there."""
    return (
        q.device.type == "cpu"
        and q.numel() != 0
        and k.numel() != 0
        and (mask is None or mask.dtype == q.dtype)
        and not (
            torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
        )
        and torch._fused_sdp_choice(q, k, v, mask, 0.0, causal, scale=scale) == _FLASH
    )


_FLASH = int(SDPBackend.FLASH_ATTENTION.value)


def _complex_conv_backward(
    conv: Callable[..., Tensor],
    x: Tensor,
    weight: Tensor,
    channels: int | None,
    grad_output: Tensor,
    needs: tuple,
) -> tuple:
    """The gradients of a complex convolution ``conv(x, weight, bias)`` (a bias of
    ``channels`` where not None). torch's ``convolution_backward`` has no complex CPU
    kernels; torch's autograd differentiates its complex convolution, which is real ones,
    instead: so does this, by replaying the forward on torch's tape."""
    bias = None if channels is None else torch.zeros(channels, dtype=x.dtype, device=x.device)
    leaves = [None if t is None else t.detach().requires_grad_() for t in (x, weight, bias)]
    with torch.enable_grad():
        out = conv(*leaves)
    return _replay((out, leaves), grad_output, (needs[0], needs[1], needs[2] and bias is not None))


def _conv(
    conv: Callable[..., Tensor],
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> tuple[Tensor, tuple]:
    """``conv(x, weight, bias, ...)`` (``F.conv2d`` or ``F.conv3d``) and what
    :func:`_conv_backward` reads."""
    out = conv(x, weight, bias, stride, padding, dilation, groups)
    return out, (x, weight, bias is not None, stride, padding, dilation, groups)


def _conv_backward(
    conv: Callable[..., Tensor], saved: tuple, grad_output: Tensor, needs: tuple
) -> tuple:
    """The gradients of :func:`_conv`'s convolution ``conv``: torch's own backward kernel,
    or for complex inputs torch's autograd through ``conv``."""
    x, weight, has_bias, stride, padding, dilation, groups = saved
    if x.is_complex():
        return _complex_conv_backward(
            lambda x, w, b: conv(x, w, b, stride, padding, dilation, groups),
            x,
            weight,
            weight.shape[0] if has_bias else None,
            grad_output,
            needs,
        )
    return aten.convolution_backward.default(
        grad_output,
        x,
        weight,
        [weight.shape[0]] if has_bias else None,
        stride,
        padding,
        dilation,
        False,  # not transposed
        [0] * len(stride),  # output padding
        groups,
        [needs[0], needs[1], needs[2] and has_bias],
    )


#: Held while a backend's generator is lent to torch's global one: two threads lending at
#: once interleaved their saves and restores (equal dropout masks, torch's own stream changed).
LENDING = threading.RLock()


@contextmanager
def _lent(generator: torch.Generator, device: torch.device) -> Iterator[None]:
    """Within the block, torch's default generator of ``device`` continues ``generator``'s
    stream; afterwards ``generator`` has advanced and the default generator is as it was
    (code that uses torch directly sees no change)."""
    rng = torch if device.type == "cpu" else torch.get_device_module(device.type)
    where = () if device.type == "cpu" else (device,)
    with LENDING:
        own = rng.get_rng_state(*where)
        rng.set_rng_state(generator.get_state(), *where)
        try:
            yield
        finally:
            generator.set_state(rng.get_rng_state(*where))
            rng.set_rng_state(own, *where)


def _gpu_rnn_mode(device: torch.device, training: bool, dropout: float) -> tuple[bool, float]:
    """The (train, dropout) a recurrent kernel runs with. cuDNN and MIOpen have no backward
    for their inference mode (torch raises 'cudnn RNN backward can only be called in training
    mode'), and the IR differentiates an evaluation too: on a GPU it runs in training mode
    without dropout, the same function."""
    return (True, 0.0) if device.type != "cpu" and not training else (training, dropout)


def _dense(device: torch.device, *tensors: Tensor) -> Sequence[Tensor]:
    """A recurrent kernel's inputs, states and weights as the GPU kernels take them: dense
    (cuDNN refuses an expanded or transposed hx, and views of strided inputs). The CPU
    kernel takes any: there they pass as they are (11 ``contiguous`` calls of a 2-layer
    LSTM's operands cost ~4 us a call)."""
    return tensors if device.type == "cpu" else [t.contiguous() for t in tensors]


#: torch's own recurrent kernels (what torch.nn.RNN/LSTM/GRU call), by the IR's mode names.
_RNN_KERNELS = {
    "RNN_TANH": torch._VF.rnn_tanh,
    "RNN_RELU": torch._VF.rnn_relu,
    "LSTM": torch._VF.lstm,
    "GRU": torch._VF.gru,
}


#: ATen's reduction codes (torch's ``Reduction`` enum).
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_MEAN = _REDUCTIONS["mean"]


#: FusedComposites.checked_indices on the CPU, and elsewhere.
_CHECKED_ON_CPU = frozenset(("embedding", "nll_loss", "cross_entropy", "cross_entropy_nd"))
_NONE_CHECKED: frozenset[str] = frozenset()


def _out_of_range(op: str, indices: Tensor, size: int) -> str:
    """torch's words for an index outside ``[0, size)``, then the core's (ops/bounds.py
    check_index), which name ``op`` and the bad value."""
    low, high = torch.aminmax(indices)
    bad = int(low) if low < 0 else int(high)
    return (
        f"index out of range in self: {op} index {bad} is out of bounds for dimension 0 "
        f"with size {size}"
    )


class FusedComposites:
    """Mixed into the backend class: the core finds these methods by name."""

    _on_cpu: bool  # (the backend's: whether its device is the CPU)

    def fused_cross_entropy(
        self, x: Tensor, target: Tensor, ignore_index: int
    ) -> tuple[Tensor, tuple]:
        # F.cross_entropy's two kernels and their backwards, called as its nodes call them.
        logp = aten._log_softmax.default(x, 1, False)
        loss, total = aten.nll_loss_forward.default(logp, target, None, _MEAN, ignore_index)
        return loss, (logp, target, ignore_index, total, x.dtype)

    def fused_cross_entropy_backward(
        self, saved: tuple, grad_output: Tensor, needs: tuple
    ) -> tuple:
        logp, target, ignore_index, total, dtype = saved
        if not needs[0]:
            return None, None
        g = aten.nll_loss_backward.default(
            grad_output, logp, target, None, _MEAN, ignore_index, total
        )
        return aten._log_softmax_backward_data.default(g, logp, 1, dtype), None

    def fused_cross_entropy_nd(
        self, x: Tensor, target: Tensor, ignore_index: int
    ) -> tuple[Tensor, Saved]:
        # The target is no input of the recorded graph: it has no gradient. torch's own
        # kernel takes (N, C, d1, ..., dk) logits as they are (nll_loss2d).
        return _record(lambda x: F.cross_entropy(x, target, ignore_index=ignore_index), x)

    def nll_loss(
        self,
        x: Tensor,
        target: Tensor,
        weight: Tensor | None,
        reduction: str,
        ignore_index: int,
    ) -> tuple[Tensor, Tensor]:
        return aten.nll_loss_forward.default(
            x, target, weight, _REDUCTIONS[reduction], ignore_index
        )

    def nll_loss_backward(
        self,
        grad: Tensor,
        x: Tensor,
        target: Tensor,
        weight: Tensor | None,
        reduction: str,
        ignore_index: int,
        total_weight: Tensor,
    ) -> Tensor:
        return aten.nll_loss_backward.default(
            grad, x, target, weight, _REDUCTIONS[reduction], ignore_index, total_weight
        )

    def fused_ctc_loss(
        self,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor,
        target_lengths: Tensor,
        blank: int,
        zero_infinity: bool,
    ) -> tuple[Tensor, Saved]:
        # torch's own kernel and its gradient; only log_probs is an input of the graph.
        def loss(lp: Tensor) -> Tensor:
            return torch.ctc_loss(
                lp, targets, input_lengths, target_lengths, blank, 0, zero_infinity
            )

        return _record(loss, log_probs)

    def fused_rnn(self, *args: object) -> tuple[Tensor, Saved]:
        # One torch kernel for the whole stack (cuDNN on CUDA), as torch.nn.LSTM calls it.
        tensors, (mode, num_layers, bidirectional, has_bias, dropout, training) = (
            args[:-6],
            args[-6:],
        )
        n_states = 2 if mode == "LSTM" else 1
        kernel = _RNN_KERNELS[mode]
        device = self.torch_device
        train, p = _gpu_rnn_mode(device, training, dropout)

        def run(x: Tensor, *rest: Tensor) -> Tensor:
            x, *rest = _dense(device, x, *rest)
            states, weights = rest[:n_states], rest[n_states:]
            hx = list(states) if mode == "LSTM" else states[0]
            result = kernel(x, hx, weights, has_bias, num_layers, p, train, bidirectional, False)
            return torch.cat([t.reshape(-1) for t in result])

        if not (dropout and training and num_layers > 1):
            return _record(run, *tensors)
        with _lent(self._generator, device):  # dropout between the layers
            return _record(run, *tensors)

    def fused_rnn_packed(self, *args: object) -> tuple[Tensor, Saved]:
        # The kernels' packed overload, as torch.nn.LSTM calls it for a PackedSequence: each
        # step runs on the sequences still going, where the padded path computes them all.
        tensors, batch_sizes, (mode, num_layers, bidirectional, has_bias, dropout, training) = (
            args[:-7],
            args[-7],
            args[-6:],
        )
        n_states = 2 if mode == "LSTM" else 1
        kernel = _RNN_KERNELS[mode]
        sizes = torch.tensor(batch_sizes, dtype=torch.int64)  # on the CPU, as torch wants
        device = self.torch_device
        train, p = _gpu_rnn_mode(device, training, dropout)

        def run(data: Tensor, *rest: Tensor) -> Tensor:
            data, *rest = _dense(device, data, *rest)
            states, weights = rest[:n_states], rest[n_states:]
            hx = list(states) if mode == "LSTM" else states[0]
            result = kernel(data, sizes, hx, weights, has_bias, num_layers, p, train, bidirectional)
            return torch.cat([t.reshape(-1) for t in result])

        if not (dropout and training and num_layers > 1):
            return _record(run, *tensors)
        with _lent(self._generator, device):  # dropout between the layers
            return _record(run, *tensors)

    def fused_dropout(self, x: Tensor, p: float) -> tuple[Tensor, Saved]:
        # torch's fused kernel on the backend's generator; its recorded graph keeps the mask
        # for the backward.
        with _lent(self._generator, self.torch_device):
            return _record(lambda x: F.dropout(x, p, True), x)

    @property
    def checked_indices(self) -> frozenset[str]:
        """The fused composites and optional primitives whose kernel itself raises
        PyTorch's IndexError for an index outside the table (a target outside the classes),
        so the core reads no range back before it: torch's CPU embedding, nll_loss and
        cross_entropy (its CUDA kernels assert on the device instead)."""
        # the backend's device is fixed at its creation: its flag, where reading
        # ``torch_device.type`` cost 1-2 us a call of embedding
        return _CHECKED_ON_CPU if self._on_cpu else _NONE_CHECKED

    def fused_embedding(
        self, weight: Tensor, indices: Tensor, padding_idx: int | None
    ) -> tuple[Tensor, tuple]:
        # The indices get no gradient; the backward needs them and the number of rows.
        try:
            out = F.embedding(indices, weight, padding_idx)
        except IndexError:  # (torch's CPU kernel: the core checked nothing, checked_indices)
            raise IndexError(_out_of_range("embedding()", indices, weight.shape[0])) from None
        return out, (indices, weight.shape[0], padding_idx)

    def fused_embedding_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        indices, rows, padding_idx = saved
        if not needs[0]:
            return (None,) * len(needs)
        padding = -1 if padding_idx is None else padding_idx  # aten's "no padding row"
        grad = torch.ops.aten.embedding_dense_backward.default(
            grad_output, indices, rows, padding, False
        )
        return (grad,) + (None,) * (len(needs) - 1)

    def fused_relu(self, x: Tensor) -> tuple[Tensor, Tensor]:
        # One kernel each way, where the core's rule needs a where; the output is all the
        # backward keeps (as torch's ReluBackward), so x is freed after the forward pass.
        out = torch.relu(x)
        return out, out

    def fused_relu_backward(self, saved: Tensor, grad_output: Tensor, needs: tuple) -> tuple:
        return (torch.ops.aten.threshold_backward.default(grad_output, saved, 0),)

    def fused_linear(self, x: Tensor, weight: Tensor, bias: Tensor) -> tuple[Tensor, tuple]:
        return F.linear(x, weight, bias), (x, weight)

    def fused_linear_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        x, weight = saved
        # Rows of a matrix, so each product is one mm (a 3-d non-contiguous gradient would
        # make ``@`` a batched product over an expanded weight: 5x slower).
        # (explicit sizes: -1 is ambiguous where there are no features)
        rows = math.prod(x.shape[:-1])
        grad_rows = grad_output.reshape(rows, grad_output.shape[-1])
        # conj(): PyTorch's complex gradients multiply by the conjugate (a lazy conjugate bit
        # the product reads); a real tensor's conj() is the tensor itself.
        grad_x = (grad_rows @ weight.conj()).reshape(x.shape) if needs[0] else None
        # (out, in) straight from the product: the weight's own layout, no transposed view.
        grad_w = grad_rows.T @ x.reshape(rows, x.shape[-1]).conj() if needs[1] else None
        grad_b = grad_rows.sum(0) if needs[2] else None
        return grad_x, grad_w, grad_b

    def contiguous(self, a: Tensor) -> Tensor:
        return a.contiguous()

    def fused_softmax(self, x: Tensor, axis: int) -> tuple[Tensor, tuple]:
        out = torch.softmax(x, axis)
        return out, (out, axis)  # the output is all the backward reads, as in torch

    def fused_softmax_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        out, axis = saved
        return (aten._softmax_backward_data.default(grad_output, out, axis, out.dtype),)

    def fused_log_softmax(self, x: Tensor, axis: int) -> tuple[Tensor, tuple]:
        out = torch.log_softmax(x, axis)
        return out, (out, axis)

    def fused_log_softmax_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        out, axis = saved
        return (aten._log_softmax_backward_data.default(grad_output, out, axis, out.dtype),)

    def fused_conv2d(
        self,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        groups: int,
    ) -> tuple[Tensor, tuple]:
        return _conv(F.conv2d, x, weight, bias, stride, padding, dilation, groups)

    def fused_conv2d_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        return _conv_backward(F.conv2d, saved, grad_output, needs)

    def fused_conv3d(
        self,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        stride: tuple[int, int, int],
        padding: tuple[int, int, int],
        dilation: tuple[int, int, int],
        groups: int,
    ) -> tuple[Tensor, tuple]:
        return _conv(F.conv3d, x, weight, bias, stride, padding, dilation, groups)

    def fused_conv3d_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        return _conv_backward(F.conv3d, saved, grad_output, needs)

    def fused_conv_transpose(
        self,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        output_padding: tuple[int, ...],
        groups: int,
        dilation: tuple[int, ...],
    ) -> tuple[Tensor, tuple]:
        # One kernel (cuDNN's transposed convolution on CUDA), where the core's
        # decomposition convolves a zero-dilated copy of the input.
        conv = F.conv_transpose2d if x.dim() == 4 else F.conv_transpose3d
        out = conv(x, weight, bias, stride, padding, output_padding, groups, dilation)
        saved = (x, weight, bias is not None, stride, padding, output_padding, groups, dilation)
        return out, saved

    def fused_conv_transpose_backward(
        self, saved: tuple, grad_output: Tensor, needs: tuple
    ) -> tuple:
        x, weight, has_bias, stride, padding, output_padding, groups, dilation = saved
        if x.is_complex():
            conv = F.conv_transpose2d if x.dim() == 4 else F.conv_transpose3d
            return _complex_conv_backward(
                lambda x, w, b: conv(x, w, b, stride, padding, output_padding, groups, dilation),
                x,
                weight,
                weight.shape[1] * groups if has_bias else None,
                grad_output,
                needs,
            )
        return torch.ops.aten.convolution_backward.default(
            grad_output,
            x,
            weight,
            [weight.shape[1] * groups] if has_bias else None,
            stride,
            padding,
            dilation,
            True,  # transposed
            output_padding,
            groups,
            [needs[0], needs[1], needs[2] and has_bias],
        )

    def fused_interpolate(
        self,
        x: Tensor,
        mode: str,
        size: tuple[int, ...],
        scales: tuple[float, ...] | None,
        align_corners: bool,
        antialias: bool,
    ) -> tuple[Tensor, Saved]:
        # Given scale factors enter torch's position arithmetic (1 / scale, not in / out);
        # the output size they give is the one the core computed.
        corners = align_corners if mode in ("linear", "bilinear", "bicubic", "trilinear") else None
        if scales is None:
            kwargs: dict = {"size": size}
        else:
            kwargs = {"scale_factor": scales, "recompute_scale_factor": False}

        def run(x: Tensor) -> Tensor:
            if x.numel() == 0:  # torch's GPU kernels fail to launch on no elements
                return x.new_zeros((*x.shape[:2], *size)) + x.sum().to(x.dtype)
            return F.interpolate(x, mode=mode, align_corners=corners, antialias=antialias, **kwargs)

        if not x.is_floating_point():  # nearest on integers: nothing to differentiate
            return run(x), None
        return _record(run, x)

    def fused_grid_sample(
        self, x: Tensor, grid: Tensor, mode: str, padding_mode: str, align_corners: bool
    ) -> tuple[Tensor, Saved]:
        return _record(
            lambda x, grid: F.grid_sample(x, grid, mode, padding_mode, align_corners), x, grid
        )

    def fused_max_pool2d(
        self, x: Tensor, kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int]
    ) -> tuple[Tensor, tuple]:
        out, indices = F.max_pool2d(x, kernel, stride, padding, return_indices=True)
        return out, (x, indices, kernel, stride, padding)

    def fused_max_pool2d_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        x, indices, kernel, stride, padding = saved
        grad = torch.ops.aten.max_pool2d_with_indices_backward.default(
            grad_output, x, kernel, stride, padding, [1, 1], False, indices
        )
        return (grad,)

    def fused_max_pool(
        self,
        x: Tensor,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        ceil_mode: bool,
    ) -> tuple[Tensor, tuple]:
        return _max_pool(x, kernel, stride, padding, dilation, ceil_mode)

    def fused_max_pool_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        one_d, x, indices, kernel, *rest = saved
        backward = (
            torch.ops.aten.max_pool2d_with_indices_backward.default
            if len(kernel) == 2
            else torch.ops.aten.max_pool3d_with_indices_backward.default
        )
        g = grad_output.unsqueeze(2) if one_d else grad_output
        grad = backward(g, x, kernel, *rest, indices)
        return (grad.squeeze(2) if one_d else grad,)

    def fused_max_pool_with_indices(
        self,
        x: Tensor,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        ceil_mode: bool,
    ) -> tuple[tuple[Tensor, Tensor], tuple]:
        # The indices max_pool's kernel computes anyway (its backward reads them); a 1-d pool
        # runs over a height of 1, where the flat index h * W + w is w.
        out, saved = _max_pool(x, kernel, stride, padding, dilation, ceil_mode)
        indices = saved[2].squeeze(2) if saved[0] else saved[2]
        return (out, indices), saved

    fused_max_pool_with_indices_backward = fused_max_pool_backward

    def fused_avg_pool(
        self,
        x: Tensor,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: int | None,
    ) -> tuple[Tensor, tuple]:
        one_d, dtype = len(kernel) == 1, x.dtype
        x, kernel, stride, padding = _pool_as_2d(x, kernel, stride, padding)
        if len(kernel) == 3 and x.device.type == "cpu" and x.element_size() == 2:
            x = x.float()  # torch's 3-d CPU kernels have no float16 or bfloat16
        pool = F.avg_pool2d if len(kernel) == 2 else F.avg_pool3d
        options = (ceil_mode, count_include_pad, divisor_override)
        out = pool(x, kernel, stride, padding, *options).to(dtype)
        saved = (one_d, dtype, x, kernel, stride, padding, options)
        return (out.squeeze(2) if one_d else out), saved

    def fused_avg_pool_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        one_d, dtype, x, kernel, stride, padding, options = saved
        backward = (
            torch.ops.aten.avg_pool2d_backward.default
            if len(kernel) == 2
            else torch.ops.aten.avg_pool3d_backward.default
        )
        g = (grad_output.unsqueeze(2) if one_d else grad_output).to(x.dtype)
        grad = backward(g, x, kernel, stride, padding, *options).to(dtype)
        return (grad.squeeze(2) if one_d else grad,)

    def fused_adaptive_avg_pool(
        self, x: Tensor, output_size: tuple[int, ...]
    ) -> tuple[Tensor, Saved]:
        pool = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)
        return _record(lambda x: pool[len(output_size) - 1](x, output_size), x)

    def fused_adaptive_max_pool(
        self, x: Tensor, output_size: tuple[int, ...]
    ) -> tuple[Tensor, Saved]:
        pool = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)
        return _record(lambda x: pool[len(output_size) - 1](x, output_size), x)

    def fused_instance_norm(
        self, x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float
    ) -> tuple[Tensor, Saved]:
        # No running statistics: the core updates those itself.
        n, c = x.shape[0], x.shape[1]
        if n == 0:  # torch's kernels refuse an empty batch with an affine map
            channel = (1, -1) + (1,) * (x.dim() - 2)

            def shift(x: Tensor, w: Tensor | None, b: Tensor | None) -> Tensor:
                y = x if w is None else x * w.reshape(channel)
                return y if b is None else y + b.reshape(channel)

            return _record(shift, x, weight, bias)
        # Instance norm is group norm with one group per channel: torch's group-norm kernels,
        # called directly (no recorded graph), take the per-channel affine map as it is,
        # where batch norm over (1, N*C, *spatial) needs it repeated per sample, and run 2-5x
        # faster than the batch-norm ones on the CPU (one thread, a U-Net's shapes). They
        # read memory in the standard layout only (a strided one, even a stepped or broadcast
        # weight, gives wrong values).
        x = x.contiguous()
        weight = None if weight is None else weight.contiguous()
        bias = None if bias is None else bias.contiguous()
        spatial = math.prod(x.shape[2:])
        out, mean, rstd = torch.ops.aten.native_group_norm.default(
            x, weight, bias, n, c, spatial, c, eps
        )
        return out, ("native", x, weight, mean, rstd, (n, c, spatial))

    def fused_instance_norm_backward(
        self, saved: Saved, grad_output: Tensor, needs: tuple
    ) -> tuple:
        if saved[0] != "native":
            return _replay(saved, grad_output, needs)
        _, x, weight, mean, rstd, (n, c, spatial) = saved
        grad_output = grad_output.contiguous()
        # Without a weight the kernel computes no parameter gradient (it raises): the bias's
        # is the sum of the output gradient over every axis but the channels.
        by_kernel = weight is not None and needs[2]
        grad_x, grad_w, grad_b = torch.ops.aten.native_group_norm_backward.default(
            grad_output, x, mean, rstd, weight, n, c, spatial, c, [needs[0], needs[1], by_kernel]
        )
        if needs[2] and not by_kernel:
            grad_b = grad_output.sum([0, *range(2, grad_output.dim())])
        return grad_x, grad_w, grad_b

    def fused_embedding_bag(
        self,
        weight: Tensor,
        input: Tensor,
        offsets: Tensor | None,
        per_sample_weights: Tensor | None,
        mode: str,
        padding_idx: int | None,
        include_last_offset: bool,
    ) -> tuple[Tensor, Saved]:
        # The indices and offsets are no inputs of the recorded graph (they have no gradient):
        # None stands in for them, so that the gradients come back in argument order.
        def bag(w: Tensor, _input: None, _offsets: None, scale: Tensor | None) -> Tensor:
            return F.embedding_bag(
                input,
                w,
                offsets,
                mode=mode,
                per_sample_weights=scale,
                include_last_offset=include_last_offset,
                padding_idx=padding_idx,
            )

        return _record(bag, weight, None, None, per_sample_weights)

    def fused_layer_norm(
        self,
        x: Tensor,
        weight: Tensor | None,
        bias: Tensor | None,
        normalized_ndim: int,
        eps: float,
    ) -> tuple[Tensor, tuple]:
        shape = x.shape[x.ndim - normalized_ndim :]
        out, mean, rstd = torch.ops.aten.native_layer_norm.default(x, shape, weight, bias, eps)
        return out, (x, shape, mean, rstd, weight, bias)

    def fused_layer_norm_backward(self, saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
        x, shape, mean, rstd, weight, bias = saved
        return torch.ops.aten.native_layer_norm_backward.default(
            grad_output,
            x,
            shape,
            mean,
            rstd,
            weight,
            bias,
            [needs[0], needs[1] and weight is not None, needs[2] and bias is not None],
        )

    def fused_scaled_dot_product_attention(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool, scale: float
    ) -> tuple[Tensor, Saved | _FlashSaved]:
        if _cpu_flash(q, k, v, mask, causal, scale):
            out, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu.default(
                q, k, v, 0.0, causal, attn_mask=mask, scale=scale
            )
            return out, _FlashSaved(q, k, v, out, logsumexp, mask, causal, scale)
        # The mask is a constant of the kernel (the core never asks for its gradient): a
        # bool mask could not be a leaf that requires grad.
        return _record(
            lambda q, k, v: F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, is_causal=causal, scale=scale
            ),
            q,
            k,
            v,
        )

    def fused_scaled_dot_product_attention_backward(
        self, saved: Saved | _FlashSaved, grad_output: Tensor, needs: tuple
    ) -> tuple:
        if type(saved) is not _FlashSaved:
            return _replay(saved, grad_output, needs)
        q, k, v, out, logsumexp, mask, causal, scale = saved
        grads = aten._scaled_dot_product_flash_attention_for_cpu_backward.default(
            grad_output, q, k, v, out, logsumexp, 0.0, causal, attn_mask=mask, scale=scale
        )
        return tuple(g if need else None for g, need in zip(grads, needs))

    def _backward(self, saved: Saved, grad_output: Tensor, needs: tuple) -> tuple:
        return _replay(saved, grad_output, needs)

    fused_rnn_backward = _backward
    fused_ctc_loss_backward = _backward
    fused_cross_entropy_nd_backward = _backward
    fused_rnn_packed_backward = _backward
    fused_dropout_backward = _backward
    fused_interpolate_backward = _backward
    fused_grid_sample_backward = _backward
    fused_adaptive_avg_pool_backward = _backward
    fused_adaptive_max_pool_backward = _backward
    fused_embedding_bag_backward = _backward


def _max_pool(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool,
) -> tuple[Tensor, tuple]:
    """torch's max pooling with indices; ``saved`` for its backward (the indices at [2])."""
    one_d = len(kernel) == 1
    x, kernel, stride, padding, dilation = _pool_as_2d(x, kernel, stride, padding, dilation)
    pool = F.max_pool2d if len(kernel) == 2 else F.max_pool3d
    out, indices = pool(x, kernel, stride, padding, dilation, ceil_mode, True)
    saved = (one_d, x, indices, kernel, stride, padding, dilation, ceil_mode)
    return (out.squeeze(2) if one_d else out), saved


def _pool_as_2d(x: Tensor, *sizes: tuple[int, ...]) -> tuple:
    """A 1-d pool's input and per-axis sizes as a 2-d pool's, over a length-1 height (torch
    has no 1-d pooling backward kernels); 2-d and 3-d pools unchanged."""
    if len(sizes[0]) != 1:
        return (x, *sizes)
    first = (1, 1, 0, 1)  # kernel, stride, padding, dilation of the added axis
    return (x.unsqueeze(2), *((f, *size) for f, size in zip(first, sizes)))
