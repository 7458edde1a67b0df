"""Pruning of module parameters (``tw.nn.utils.prune``), PyTorch's mechanism: pruning
``module.<name>`` moves the parameter to ``<name>_orig``, adds a buffer ``<name>_mask`` and a
forward pre-hook (the pruning method itself) that recomputes ``<name> = <name>_orig * mask``
before each call, so gradients reach ``<name>_orig`` masked. Pruning the same tensor again
combines the masks through a :class:`PruningContainer`; :func:`remove` makes it permanent.

Random methods draw from tensorweaver's generator (``tw.manual_seed``).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.utils.convert_parameters import parameters_to_vector
from tensorweaver.tensor import Tensor

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod(ABC):
    """A way of computing a pruning mask; applied to a module, it is the forward pre-hook
    that keeps ``module.<name>`` equal to the masked original."""

    # Set by ``apply`` (or by hand for a container); as PyTorch, there is no default.
    _tensor_name: str
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs: Any) -> None:
        """The forward pre-hook: recompute the pruned tensor from the original and mask."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t`` (same shape), pruning on top of ``default_mask``."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_orig`` times ``<name>_mask`` of ``module`` (differentiable in the
        original)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(
        cls,
        module: Module,
        name: str,
        *args: Any,
        importance_scores: Optional[Tensor] = None,
        **kwargs: Any,
    ) -> BasePruningMethod:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, combined with any pruning
        already applied to it; ``importance_scores`` (the tensor itself by default) rank its
        entries. Returns the hook now on the module (a container after the first pruning)."""
        method = _composed_with_previous(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of "
                    f"{module}, got {importance_scores.shape} vs {orig.shape}"
                )
        else:
            importance_scores = orig

        first = not isinstance(method, PruningContainer)
        if first:  # the parameter moves to <name>_orig; <name> becomes a plain attribute
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = tw.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()

        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # leave the module as it was
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(
        self,
        t: Tensor,
        default_mask: Optional[Tensor] = None,
        importance_scores: Optional[Tensor] = None,
    ) -> Tensor:
        """``t`` with this method's mask applied (the module is not involved)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(
                    "importance_scores should have the same shape as tensor t, got "
                    f"{importance_scores.shape} vs {t.shape}"
                )
        else:
            importance_scores = t
        if default_mask is None:
            default_mask = tw.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter again holding the
        pruned values; ``<name>_orig`` and ``<name>_mask`` go (the hook is removed by the
        caller, :func:`remove`)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        pruned = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = pruned.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composed_with_previous(
    cls: type, module: Module, name: str, *args: Any, **kwargs: Any
) -> BasePruningMethod:
    """A new ``cls`` method for ``name``, put after the pruning hook already on ``module``
    for ``name`` (whose hook is taken off; ``apply`` registers the result)."""
    previous = [
        (key, hook)
        for key, hook in module._forward_pre_hooks.items()
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name
    ]
    if len(previous) > 1:
        raise AssertionError(
            f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
            f"{module}. Use a PruningContainer."
        )
    for key, _ in previous:
        del module._forward_pre_hooks[key]

    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not previous:
        return method
    old = previous[0][1]
    if not isinstance(old, PruningContainer):
        old = PruningContainer(old)
    old.add_pruning_method(method)
    return old


class PruningContainer(BasePruningMethod):
    """The pruning history of one tensor: a sequence of methods, the last of which prunes
    further among the entries (or channels) the earlier ones kept."""

    def __init__(self, *args: Any) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:  # from one method: it names the tensor
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:  # several methods (or none): ``_tensor_name`` must be set beforehand
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: Optional[BasePruningMethod]) -> None:
        """Append ``method``, which must prune the same tensor as the container."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. "
                f"Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: Any) -> Any:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the last method's mask computed on what it keeps: the
        unpruned entries (unstructured), the channels not entirely pruned along the method's
        ``dim`` (structured), or everything (global)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            kept: Any = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    'Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                    "`dim` defined."
                )
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            others = [d for d in range(n_dims) if d != dim]
            channels = default_mask.sum(dim=others) != 0
            kept = tuple(channels if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            kept = tuple(slice(None) for _ in range(len(t.shape)))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[kept], default_mask=default_mask[kept])
        new_mask[kept] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a pruned parametrization that keeps values)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        """Add the pruning hooks to ``module.<name>`` without pruning anything."""
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries (a count, or a fraction of the tensor) chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        def chosen(t: Tensor, k: int) -> Tensor:
            scores = tw.rand_like(t)  # module attribute: a shared draw can stand in
            return tw.topk(scores.view(-1), k=k).indices

        return _unstructured_mask(t, default_mask, self.amount, chosen)

    @classmethod
    def apply(cls, module: Module, name: str, amount: float) -> BasePruningMethod:  # type: ignore[override]
        """Prune ``amount`` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries (a count, or a fraction) of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        def smallest(t: Tensor, k: int) -> Tensor:
            return tw.topk(tw.abs(t).view(-1), k=k, largest=False).indices

        return _unstructured_mask(t, default_mask, self.amount, smallest)

    @classmethod
    def apply(  # type: ignore[override]
        cls,
        module: Module,
        name: str,
        amount: float,
        importance_scores: Optional[Tensor] = None,
    ) -> BasePruningMethod:
        """Prune the ``amount`` smallest entries (by ``|importance_scores|``)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim`` chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: float, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels, k = _channels_to_prune(t, self.amount, self.dim)
        if k == 0:
            return default_mask
        draws = tw.rand(channels, device=t.device)
        keep = draws > tw.kthvalue(draws, k=k).values
        return _channel_mask(t, self.dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: float, dim: int = -1) -> BasePruningMethod:  # type: ignore[override]
        """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: float, n: Any, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels, k = _channels_to_prune(t, self.amount, self.dim)
        norms = _compute_norm(t, self.n, self.dim)
        kept = tw.topk(norms, k=channels - k, largest=True).indices
        if k == 0:
            return default_mask
        return _channel_mask(t, self.dim, kept) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(  # type: ignore[override]
        cls,
        module: Module,
        name: str,
        amount: float,
        n: Any,
        dim: int,
        importance_scores: Optional[Tensor] = None,
    ) -> BasePruningMethod:
        """Prune the ``amount`` channels along ``dim`` of smallest ``n``-norm."""
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prunes where a given ``mask`` is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(
                f"default_mask shape {default_mask.shape} must match self.mask shape "
                f"{self.mask.shape}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        """Prune ``module.<name>`` where ``mask`` is zero."""
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Add the pruning reparametrization to ``module.<name>`` with an all-ones mask."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: float) -> Module:
    """Prune ``amount`` (count or fraction) random entries of ``module.<name>``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(
    module: Module, name: str, amount: float, importance_scores: Optional[Tensor] = None
) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest absolute value (of
    ``importance_scores`` when given)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: float, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(
    module: Module,
    name: str,
    amount: float,
    n: Any,
    dim: int,
    importance_scores: Optional[Tensor] = None,
) -> Module:
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest
    ``n``-norm (of ``importance_scores`` when given)."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]],
    pruning_method: type,
    importance_scores: Optional[dict] = None,
    **kwargs: Any,
) -> None:
    """Prune the ``(module, name)`` tensors together, as one vector: an unstructured
    ``pruning_method(**kwargs)`` ranks all their entries (by ``importance_scores[(module,
    name)]`` where given) and each tensor gets its share of the mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    # As PyTorch, ``parameters`` is walked three times: a one-shot iterator runs dry (and
    # the second walk's empty concatenation raises).
    scores = parameters_to_vector(
        [importance_scores.get((m, name), getattr(m, name)) for m, name in parameters]
    )
    default_mask = parameters_to_vector([_current_mask(m, name) for m, name in parameters])

    container = PruningContainer()
    container._tensor_name = "temp"  # the name only has to agree with the method's
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found '
            f"method {pruning_method} of type {method.PRUNING_TYPE}"
        )
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)

    start = 0
    for m, name in parameters:
        param = getattr(m, name)
        count = param.numel()
        custom_from_mask(m, name, mask=final_mask[start : start + count].view_as(param))
        start += count


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is zero."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: it becomes a plain parameter holding
    the pruned values, without ``<name>_orig``, ``<name>_mask`` or the hook."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any of its submodules carries a pruning hook."""
    return any(
        isinstance(hook, BasePruningMethod)
        for _, sub in module.named_modules()
        for hook in sub._forward_pre_hooks.values()
    )


def _current_mask(module: Module, name: str) -> Tensor:
    """The mask already on ``module.<name>``, all ones if it is not pruned yet."""
    mask = getattr(module, name + "_mask", None)
    return tw.ones_like(getattr(module, name)) if mask is None else mask


def _channel_mask(t: Tensor, dim: int, channels: Tensor) -> Tensor:
    """Zeros like ``t`` with ones in the ``channels`` (a boolean mask or indices) along
    ``dim``."""
    mask = tw.zeros_like(t)
    mask[tuple(channels if d == dim % t.dim() else slice(None) for d in range(t.dim()))] = 1
    return mask


def _unstructured_mask(
    t: Tensor, default_mask: Tensor, amount: Any, chosen: Callable[[Tensor, int], Tensor]
) -> Tensor:
    """``default_mask`` with the ``k`` flat positions ``chosen(t, k)`` zeroed, ``k`` the
    count ``amount`` stands for among ``t``'s entries."""
    size = t.nelement()
    k = _compute_nparams_toprune(amount, size)
    _validate_pruning_amount(k, size)
    mask = default_mask.clone()
    if k != 0:
        mask.view(-1)[chosen(t, k)] = 0
    return mask


def _channels_to_prune(t: Tensor, amount: Any, dim: int) -> tuple[int, int]:
    """The number of channels of ``t`` along ``dim`` and the count ``amount`` stands for
    among them, after PyTorch's checks of structured pruning, in its order."""
    _validate_structured_pruning(t)
    _validate_pruning_dim(t, dim)
    channels = t.shape[dim]
    k = _compute_nparams_toprune(amount, channels)
    _validate_pruning_amount(k, channels)
    return channels, k


def _validate_pruning_amount_init(amount: Any) -> None:
    """``amount`` must be a non-negative int (a count) or a float in [0, 1] (a fraction)."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    # As PyTorch's comparisons: a NaN fraction passes here (and fails when counted).
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)
    ):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _validate_pruning_amount(amount: Any, tensor_size: int) -> None:
    """A count may not exceed the number of entries (or channels) there are."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(
            f"amount={amount} should be smaller than the number of parameters to "
            f"prune={tensor_size}"
        )


def _validate_structured_pruning(t: Tensor) -> None:
    if len(t.shape) <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found "
            f"tensor of shape {t.shape} with {len(t.shape)} dims"
        )


def _compute_nparams_toprune(amount: Any, tensor_size: int) -> int:
    """The count ``amount`` stands for (a fraction rounds half to even, as Python)."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n: Any, dim: int) -> Tensor:
    """The ``n``-norm of each channel of ``t`` along ``dim`` (over all other dims)."""
    others = list(range(t.dim()))
    del others[dim]
    return tw.norm(t, p=n, dim=others)
