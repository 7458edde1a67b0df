"""The losses ``tw.fit`` knows by name, and how a loss is called on a batch.

The names are derived from the loss layers ``tw.nn`` has (every ``_Loss`` subclass), so a
loss added to ``tw.nn`` is known here without editing this module: ``MarginRankingLoss`` is
``"margin_ranking"``, and also ``"margin_ranking_loss"``, its ``tw.nn.functional`` name.
"""

from __future__ import annotations

import copy
import inspect
import re
from typing import Any, Callable, Union

import numpy as np

import tensorweaver.nn as nn
import tensorweaver.nn.functional as F
from tensorweaver.nn.modules.loss import _Loss
from tensorweaver.tensor import Tensor

LossFn = Callable[[Any, Any], Tensor]

# Where PyTorch's functional names spell a part of the class name differently.
_FUNCTIONAL_SPELLING = (("bce", "binary_cross_entropy"), ("multi_label", "multilabel"))

# Names kept from before the derived ones: "bce" is the stable loss on logits (as the
# "accuracy" metric reads 0/1 outputs as logits); BCELoss is "binary_cross_entropy".
_ALIASES = {"mae": "l1", "bce": "bce_with_logits"}

# Parameters that take the batch's targets; the others take the model's outputs.
_TARGET_SLOTS = frozenset({"target", "targets"})


def _snake(class_name: str) -> str:
    """``"BCEWithLogitsLoss"`` -> ``"bce_with_logits"``, ``"SmoothL1Loss"`` -> ``"smooth_l1"``."""
    stem = class_name[: -len("Loss")] if class_name.endswith("Loss") else class_name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem).lower()


def _functional_name(snake: str) -> str | None:
    """The ``tw.nn.functional`` name of the loss called ``snake``, if it has one."""
    for short, long in _FUNCTIONAL_SPELLING:
        snake = re.sub(rf"(^|_){short}(_|$)", rf"\1{long}\2", snake)
    for name in (f"{snake}_loss", snake):
        if callable(getattr(F, name, None)):
            return name
    return None


def _loss_classes() -> dict[str, type[_Loss]]:
    """``{name: loss class}`` for every loss layer in ``tw.nn``, by both of its names."""
    table: dict[str, type[_Loss]] = {}
    for attr, value in sorted(vars(nn).items()):
        if attr.startswith("_") or not (isinstance(value, type) and issubclass(value, _Loss)):
            continue
        snake = _snake(attr)
        table.setdefault(snake, value)
        functional = _functional_name(snake)
        if functional is not None:
            table.setdefault(functional, value)
    for alias, name in _ALIASES.items():
        table[alias] = table[name]
    return table


#: name -> the ``tw.nn`` loss class it stands for (built with its defaults: mean reduction).
LOSSES: dict[str, type[_Loss]] = _loss_classes()


def get_loss(loss: Union[str, _Loss, LossFn]) -> LossFn:
    """The loss for ``loss``: a name from :data:`LOSSES` or a ``tw.nn`` loss layer, called
    as :func:`call_loss` describes, or any other callable ``loss(output, target) -> scalar
    Tensor``, returned as is."""
    if isinstance(loss, _Loss):
        return _batch_loss(loss, type(loss).__name__)
    if callable(loss):
        return loss
    if loss not in LOSSES:
        raise ValueError(
            f"fit: unknown loss {loss!r}; use one of {sorted(LOSSES)}, a tw.nn loss layer or "
            "a callable loss(output, target) -> Tensor"
        )
    return _batch_loss(LOSSES[loss](), repr(loss))


# The losses that read integer class targets, for which ``class_weight`` means something.
_CLASSIFICATION = (nn.CrossEntropyLoss, nn.NLLLoss, nn.MultiMarginLoss)

WeightedLossFn = Callable[[Any, Any, Tensor], Tensor]


def get_weighted_loss(loss: Union[str, _Loss, LossFn], classes: bool) -> WeightedLossFn:
    """``loss(output, target, weight)``: the batch's per-sample losses times ``weight``
    (``(N,)``), averaged over the batch size as Keras' default ``sum_over_batch_size``
    reduction does (not over the weights' sum). A loss whose unreduced value has more than
    the batch dimension is first averaged over the others, per sample. ``loss`` is a name
    from :data:`LOSSES` or a ``tw.nn`` loss layer (a copy of it is called with
    ``reduction="none"``); ``classes`` (for ``class_weight``) requires a loss of integer
    class targets."""
    if isinstance(loss, _Loss):
        module, label = copy.copy(loss), type(loss).__name__
        module.reduction = "none"
    elif isinstance(loss, str) and loss in LOSSES:
        module, label = LOSSES[loss](reduction="none"), repr(loss)
    else:
        raise ValueError(
            "fit: sample_weight and class_weight need the loss per sample: pass a loss name "
            f"or a tw.nn loss layer, not {type(loss).__name__}"
        )
    if classes and not isinstance(module, _CLASSIFICATION):
        raise ValueError(
            f"fit: class_weight weights samples by their integer class target, which loss "
            f"{label} does not take; use cross_entropy, nll or multi_margin, or pass "
            "sample_weight"
        )

    def weighted(output: Any, target: Any, weight: Tensor) -> Tensor:
        per_sample = call_loss(module, output, target, label)
        if per_sample.dim() == 0 or per_sample.shape[0] != weight.shape[0]:
            raise ValueError(
                f"fit: loss {label} with reduction='none' gave shape "
                f"{tuple(per_sample.shape)}, not one value per sample of the batch of "
                f"{weight.shape[0]}; it cannot be weighted per sample"
            )
        if per_sample.dim() > 1:
            per_sample = per_sample.reshape(per_sample.shape[0], -1).mean(1)
        return (per_sample * weight).mean()

    return weighted


def _batch_loss(module: _Loss, label: str) -> LossFn:
    def loss(output: Any, target: Any) -> Tensor:
        return call_loss(module, output, target, label)

    return loss


def call_loss(module: _Loss, output: Any, target: Any, label: str) -> Tensor:
    """``module``'s loss on a batch. Its ``target``/``targets`` parameters take the targets;
    its other inputs take the model's outputs in order (a model returns a tuple for losses
    of several inputs: ``(input1, input2)`` for ``margin_ranking``, ``(input, var)`` for
    ``gaussian_nll``), then any remaining targets (a tuple of targets: ``(targets,
    input_lengths, target_lengths)`` for ``ctc``). A target that would broadcast the output
    to a larger shape is an error: ``(N, 1)`` outputs against ``(N,)`` targets would
    silently give an ``(N, N)`` loss."""
    outputs = list(output) if isinstance(output, (tuple, list)) else [output]
    targets = list(target) if isinstance(target, (tuple, list)) else [target]
    slots = _input_names(module)
    has_target_slot = any(slot in _TARGET_SLOTS for slot in slots)
    args = []
    for slot in slots:
        source = targets if slot in _TARGET_SLOTS or not outputs else outputs
        if not source:
            break
        args.append(source.pop(0))
    if len(args) != len(slots) or outputs or (targets and has_target_slot):
        raise ValueError(
            f"fit: loss {label} takes ({', '.join(slots)}); the model gave "
            f"{_count(output)} output(s) and the data {_count(target)} target(s). Return a "
            "tuple from the model for its inputs other than the target"
        )
    if len(args) == 2 and all(isinstance(a, Tensor) for a in args):
        _check_broadcast(label, *args)
    return module(*args)


def _input_names(module: _Loss) -> list[str]:
    """The names of the required positional inputs of ``module.forward``."""
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = inspect.signature(module.forward).parameters.values()
    return [p.name for p in params if p.kind in positional and p.default is p.empty]


def _count(value: Any) -> int:
    return len(value) if isinstance(value, (tuple, list)) else 1


def _check_broadcast(label: str, output: Tensor, target: Tensor) -> None:
    out, tgt = tuple(output.shape), tuple(target.shape)
    try:
        joint = np.broadcast_shapes(out, tgt)
    except ValueError:  # not broadcastable: the loss itself says what it needs
        return
    if joint != out:
        raise ValueError(
            f"fit: loss {label} needs targets shaped like the model's output {out}, got "
            f"targets of shape {tgt}; reshape the targets (e.g. y.reshape(-1, 1) for a "
            "one-column output) or the output"
        )
