"""``tw.cpu.amp``: PyTorch's older spelling of autocast and loss scaling on the CPU.

PyTorch deprecates ``torch.cpu.amp.autocast(...)`` and ``torch.cpu.amp.GradScaler(...)`` in
favour of ``torch.amp.autocast("cpu", ...)`` and ``torch.amp.GradScaler("cpu", ...)``, warning
with a ``FutureWarning``; these do the same.
"""

from __future__ import annotations

from tensorweaver import amp
from tensorweaver.contract import dtypes

autocast, GradScaler = amp.deprecated_spellings("cpu", dtypes.bfloat16)
