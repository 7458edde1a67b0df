"""A TensorWeaver model as a real ``torch.nn.Module``, trained by torch's own autograd.

The model lives on a torch backend, so its parameters' native arrays are torch tensors.
:func:`to_torch_module` makes each of them a ``torch.nn.Parameter`` registered under the
model's own parameter names, and its ``forward`` runs the model with TensorWeaver's graph
recording off: every primitive is then a torch op on tensors that require grad, so torch's
autograd sees the whole computation. ``torch.optim``, DDP, ``torch.compile`` and
``torch.jit.trace`` work on the result; updates made by torch are the model's weights, since
both hold the same Parameter objects. :func:`from_torch_module` hands the model back,
detached from torch's graph.
"""

from __future__ import annotations

from typing import Any

from tensorweaver import registry
from tensorweaver.autograd.mode import no_grad
from tensorweaver.contract.cpu_loops import inductor_options
from tensorweaver.contract.dtypes import BY_NAME
from tensorweaver.tensor import Tensor


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError(
            "to_torch_module needs PyTorch: pip install tensorweaver[torch]"
        ) from None
    return torch


def _spec_of(torch_device: Any) -> str:
    kind = torch_device.type
    return f"torch:{kind}" if torch_device.index is None else f"torch:{kind}:{torch_device.index}"


def _from_torch(value: Any, torch: Any) -> Any:
    """Torch tensors (nested in tuples, lists, dicts) as TensorWeaver tensors, sharing memory."""
    if isinstance(value, torch.Tensor):
        backend = registry.backend_object(_spec_of(value.device))
        return Tensor(value, backend, BY_NAME[str(value.dtype).removeprefix("torch.")])
    if isinstance(value, (list, tuple)):
        return type(value)(_from_torch(v, torch) for v in value)
    if isinstance(value, dict):
        return {k: _from_torch(v, torch) for k, v in value.items()}
    return value


def _to_torch(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.native
    if isinstance(value, (list, tuple)):
        return type(value)(_to_torch(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    return value


def to_torch_module(model: Any, device: str | None = None, *, compile: bool = False) -> Any:
    """Wrap ``model`` (a ``tw.nn.Module``) as a ``torch.nn.Module`` that shares its weights.

    The model moves, in place, to ``device`` (a torch spec such as ``"torch:cuda"``; by
    default its current device if that is a torch one, else ``"torch"``). With
    ``compile=True`` the module is passed through ``torch.compile``; where the compiler is
    unavailable it stays eager and one warning says why.
    """
    torch = _torch()
    if device is None:
        first = next(iter(model.parameters()), None)
        on_torch = first is not None and first.device.backend == "torch"
        device = first.device.name if on_torch else "torch"
    if not str(device).startswith("torch"):
        raise ValueError(f"to_torch_module: device must be a torch device, got {device!r}")
    model.to(device)
    module = _build(torch, model)
    if compile:
        module = _compiled(torch, module)
    return module


def _build(torch: Any, model: Any) -> Any:
    class TensorWeaverModule(torch.nn.Module):
        """A TensorWeaver model run by torch: parameters are torch.nn.Parameters."""

        def __init__(self) -> None:
            super().__init__()
            object.__setattr__(self, "tw_module", model)
            self._tw_params = []
            for name, p in model.named_parameters():
                parameter = torch.nn.Parameter(p.native.detach(), requires_grad=p.requires_grad)
                _owner(torch, self, name).register_parameter(name.rsplit(".", 1)[-1], parameter)
                p.native = parameter
                self._tw_params.append((p, parameter))
            for name, b in model.named_buffers():
                _owner(torch, self, name).register_buffer(name.rsplit(".", 1)[-1], b.native)

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            # Buffers may have been replaced by .to() or load_state_dict on the torch side.
            for p, parameter in self._tw_params:
                p.native = parameter
            with no_grad():
                out = model(*_from_torch(args, torch), **_from_torch(kwargs, torch))
            return _to_torch(out)

        def train(self, mode: bool = True) -> Any:
            model.train(mode)
            return super().train(mode)

    return TensorWeaverModule()


def _owner(torch: Any, root: Any, name: str) -> Any:
    """The torch submodule that holds ``name`` (``a.b.weight`` → root.a.b), created on need."""
    node = root
    for part in name.split(".")[:-1]:
        child = node._modules.get(part)
        if child is None:
            child = torch.nn.Module()
            node.add_module(part, child)
        node = child
    return node


def _compiled(torch: Any, module: Any) -> Any:
    """``module`` with its forward run by ``torch.compile``; on the first compiler failure it
    falls back to eager for good, with one warning (an error of the model itself then
    reappears from the eager run)."""
    import warnings

    eager = module.forward
    try:
        compiled = torch.compile(eager, options=inductor_options())
    except Exception as exc:  # noqa: BLE001  (any compiler failure means: run eagerly)
        warnings.warn(
            f"torch.compile is unavailable ({exc}); running eagerly", RuntimeWarning, stacklevel=3
        )
        return module
    failed: list[str] = []

    def forward(*args: Any, **kwargs: Any) -> Any:
        if not failed:
            try:
                return compiled(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                failed.append(str(exc))
                warnings.warn(
                    f"torch.compile failed on this model ({type(exc).__name__}: "
                    f"{str(exc)[:200]}); running eagerly from now on",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return eager(*args, **kwargs)

    module.forward = forward
    return module


def from_torch_module(module: Any) -> Any:
    """The TensorWeaver model inside ``module``, with torch's latest weights, detached."""
    model = getattr(module, "tw_module", None)
    if model is None:
        inner = getattr(module, "_orig_mod", None) or getattr(module, "module", None)
        if inner is not None:
            return from_torch_module(inner)
        raise TypeError(
            "from_torch_module: expected a module made by tw.to_torch_module (or one wrapping "
            f"it, such as DDP), got {type(module).__name__}"
        )
    for p, parameter in module._tw_params:
        p.native = parameter.detach()
    return model
