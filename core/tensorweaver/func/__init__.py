"""``tw.func``: PyTorch's ``torch.func`` (functorch) transforms over the core's autograd.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize`` (eager_transforms.py),
``jacrev``, ``jacfwd``, ``hessian`` (jacobians.py), ``vmap`` (vmap.py), ``functional_call``
and ``stack_module_state`` (functional_call.py), ``functionalize`` and ``debug_unwrap``
(functionalize.py), ``replace_all_batch_norm_modules_`` (batch_norm_replacement.py),
``rearrange`` (rearrange.py).
They compose: ``vmap(grad(f))`` gives per-sample gradients, ``jacfwd(jacrev(f))`` a
Hessian.
"""

from __future__ import annotations

from tensorweaver.func.batch_norm_replacement import replace_all_batch_norm_modules_
from tensorweaver.func.eager_transforms import grad, grad_and_value, jvp, linearize, vjp
from tensorweaver.func.functional_call import functional_call, stack_module_state
from tensorweaver.func.functionalize import debug_unwrap, functionalize
from tensorweaver.func.jacobians import hessian, jacfwd, jacrev
from tensorweaver.func.rearrange import rearrange
from tensorweaver.func.vmap import vmap

__all__ = [
    "debug_unwrap",
    "functional_call",
    "functionalize",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "rearrange",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]
