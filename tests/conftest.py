"""The whole suite's root: its folder is on ``sys.path``, so every test folder can import
:mod:`tw_backends`, the one place that says how a test enters a backend.

Test modules import torch themselves (the twins they compare with), before the torch plugin
can set ``OMP_WAIT_POLICY=PASSIVE`` for it; spinning OpenMP threads make a torch test several
times slower on a busy machine, so the suite sets the policy first, as the plugin would.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
