"""Batch normalisation layers (PyTorch's ``torch.nn.modules.batchnorm``) and the state
they share with instance normalisation."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.lazy import LazyModuleMixin
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.modules.normalization import affine_parameters, reset_affine
from tensorweaver.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from tensorweaver.tensor import Tensor


class _NormBase(Module):
    """Per-channel normalisation state: the affine ``weight``/``bias`` and, with
    ``track_running_stats``, the ``running_mean``/``running_var``/``num_batches_tracked``
    buffers (shared by batch and instance normalisation, as in PyTorch)."""

    _input_dims: tuple[int, ...] = ()
    _version = 2  # the state-dict layout with num_batches_tracked, as PyTorch's

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: Optional[float] = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        affine_parameters(self, affine, bias, (num_features,), device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", tw.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", tw.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tw.tensor(0, dtype=tw.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with tw.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in self._input_dims:
            expected = " or ".join(f"{d}D" for d in self._input_dims)
            raise ValueError(
                f"{type(self).__name__}: expected {expected} input (got {input.dim()}D input "
                f"of shape {tuple(input.shape)})"
            )

    def _load_from_state_dict(
        self,
        state_dict: dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        # Checkpoints written before num_batches_tracked existed (state-dict version < 2)
        # lack it: keep the current count.
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """Normalisation state whose ``num_features`` is the first input's ``shape[1]``: until
    then ``weight``/``bias`` are :class:`UninitializedParameter` s and
    ``running_mean``/``running_var`` :class:`UninitializedBuffer` s (``num_batches_tracked``
    is a real buffer from the start)."""

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: Optional[float] = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        # No features yet: the base registers absent tensors, replaced below by lazy ones.
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tw.tensor(0, dtype=tw.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Take ``num_features`` from ``input.shape[1]`` and shape every lazy tensor by it."""
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        for tensor in (self.weight, self.bias, self.running_mean, self.running_var):
            if is_lazy(tensor):
                tensor.materialize((self.num_features,))
        self.reset_parameters()


class _BatchNorm(_NormBase):
    """Batch normalisation over the channel dimension (dim 1), with running statistics.

    In training mode the batch statistics normalise the input and, with
    ``track_running_stats``, update ``running_mean``/``running_var`` by ``momentum`` (or by a
    cumulative average when ``momentum`` is None); in eval mode the running statistics are used.
    """

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with tw.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        # Batch statistics are used in training, and in eval when no running stats exist.
        use_batch_stats = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` inputs."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` inputs."""

    _input_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)`` inputs."""

    _input_dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation synchronised across processes; on one process (the only kind tw
    runs) exactly ``BatchNorm`` of ``(N, C, ...)`` inputs. ``process_group`` is kept for
    PyTorch compatibility."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: Optional[float] = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(
                f"SyncBatchNorm: expected at least 2D input (got {input.dim()}D input of shape "
                f"{tuple(input.shape)})"
            )

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm*d`` in it replaced by a ``SyncBatchNorm`` holding
        the same parameters, buffers and mode (the module itself when it is one)."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None or not module.affine,
            )
            if module.affine:
                converted.weight = module.weight
                if module.bias is not None:
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm1d` whose ``num_features`` is inferred from ``input.size(1)``."""

    cls_to_become = BatchNorm1d
    _input_dims = BatchNorm1d._input_dims


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm2d` whose ``num_features`` is inferred from ``input.size(1)``."""

    cls_to_become = BatchNorm2d
    _input_dims = BatchNorm2d._input_dims


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm3d` whose ``num_features`` is inferred from ``input.size(1)``."""

    cls_to_become = BatchNorm3d
    _input_dims = BatchNorm3d._input_dims
