"""What a checkpoint must match to be resumed: the model's tensors and the data's shape.

Resuming into another model, or with other data, would silently train something else or
fail deep inside a layer; comparing these first gives an error that says what changed.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

_FIX = "resume with the model and data the run started with, or start a new checkpoint_dir"


def model_signature(model: Module) -> dict[str, list[Any]]:
    """``{name: [shape, dtype]}`` of the model's state dict."""
    return {k: [list(v.shape), v.dtype.name] for k, v in model.state_dict().items()}


def check_model(saved: dict[str, list[Any]], model: Module, where: str) -> None:
    """Raise ValueError naming the tensors whose names, shapes or dtypes differ."""
    mine = model_signature(model)
    if mine == saved:
        return
    missing = sorted(set(saved) - set(mine))
    unexpected = sorted(set(mine) - set(saved))
    changed = [
        f"{k} is {tuple(mine[k][0])} {mine[k][1]} here, {tuple(saved[k][0])} {saved[k][1]} there"
        for k in saved
        if k in mine and mine[k] != saved[k]
    ]
    parts = [
        f"missing here: {missing}" if missing else "",
        f"not in the checkpoint: {unexpected}" if unexpected else "",
        "; ".join(changed),
    ]
    raise ValueError(
        f"fit: cannot resume from {where}: the model differs from the checkpoint's ("
        + "; ".join(p for p in parts if p)
        + f"); {_FIX}"
    )


def data_signature(loader: Any, generators: int) -> dict[str, Any]:
    """Batches per epoch, samples, and how many generators order them."""
    dataset = getattr(loader, "dataset", None)
    return {
        "batches": _length(loader),
        "samples": _length(dataset),
        "generators": generators,
    }


def _length(obj: Any) -> int | None:
    try:
        return len(obj)
    except TypeError:
        return None


def batch_signature(x: Tensor, y: Tensor) -> dict[str, Any]:
    """A batch's per-sample shapes and dtypes (not the batch size, which may vary)."""
    return {
        "inputs": [list(x.shape[1:]), x.dtype.name],
        "targets": [list(y.shape[1:]), y.dtype.name],
    }


def check_same(kind: str, saved: dict[str, Any], mine: dict[str, Any], where: str) -> None:
    """Raise ValueError naming each entry of ``kind`` (data, batch) that differs."""
    changed = [
        f"{k} {mine.get(k)} here, {saved.get(k)} there" for k in saved if saved[k] != mine.get(k)
    ]
    if changed:
        raise ValueError(
            f"fit: cannot resume from {where}: the training {kind} differs from the "
            f"checkpoint's ({'; '.join(changed)}); {_FIX}"
        )
