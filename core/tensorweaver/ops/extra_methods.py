"""Puts on ``Tensor`` the methods that modules outside :mod:`tensorweaver.ops.methods`
define (in-place shape changes, memory facts, ``put_``, ``frexp``, ``apply_``, ...): those
modules' ``TENSOR_METHODS`` tables, the lighter ones now and the rest on first call."""

from __future__ import annotations

from typing import Any

from tensorweaver.ops import memory_facts, untyped_storage
from tensorweaver.ops.methods import _deferred, names_in

#: Methods whose module loads on their first call: name -> (module, function there).
DEFERRED: dict[str, tuple[str, str]] = {
    **names_in(
        "ops.inplace_shape",
        "squeeze_ unsqueeze_ transpose_ swapaxes_ swapdims_ t_ resize_ resize_as_ resize resize_as",
    ),
    **names_in("ops.flat_index", "put put_"),
    **names_in("ops.host_map", "apply_ map_"),
    **names_in("ops.float_parts", "frexp nextafter nextafter_"),
    **names_in("ops.multivariate_gamma", "mvlgamma mvlgamma_"),
    **names_in("ops.incomplete_gamma", "igamma igamma_ igammac igammac_"),
    **names_in("ops.short_time_fourier", "stft istft"),
    **names_in("ops.torch_level", "hardshrink prelu"),
    **names_in("ops.histograms", "histogram"),
    **names_in("ops.unsafe_splits", "unsafe_chunk unsafe_split unsafe_split_with_sizes"),
    **names_in("ops.view_copies", "narrow_copy"),
}


def attach(tensor_class: Any) -> None:
    """Define the methods and attributes on ``tensor_class`` (``tw.Tensor``)."""
    for name, value in memory_facts.TENSOR_ATTRIBUTES.items():
        setattr(tensor_class, name, value)
    for name, fn in (*memory_facts.TENSOR_METHODS.items(), *untyped_storage.TENSOR_METHODS):
        setattr(tensor_class, name, fn)
    for name, (module, attr) in DEFERRED.items():
        setattr(tensor_class, name, _deferred(name, module, attr))
