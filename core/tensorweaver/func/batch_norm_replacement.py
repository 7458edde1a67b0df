"""``torch.func.replace_all_batch_norm_modules_``: batch norms that keep no running
statistics, so that a vmapped or transformed model has no state to update."""

from __future__ import annotations

from tensorweaver.nn.modules.batchnorm import _BatchNorm
from tensorweaver.nn.modules.module import Module

__all__ = ["replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Every batch norm in ``root`` (``root`` included) stops tracking running statistics
    (its buffers become None); returns ``root``, changed in place."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
