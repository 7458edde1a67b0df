"""The whole suite's root: its folder is on ``sys.path``, so every test folder can import
:mod:`tw_backends`, the one place that says how a test enters a backend.

Test modules import torch themselves (the twins they compare with), before the torch plugin
can set ``OMP_WAIT_POLICY=PASSIVE`` for it; spinning OpenMP threads make a torch test several
times slower on a busy machine, so the suite sets the policy first, as the plugin would.
SciPy reads ``SCIPY_ARRAY_API`` once, when first imported: the array API tests (SciPy and
scikit-learn on tensors) need it set before any test imports SciPy. :mod:`snippet_outcomes`
asserts for the tests that use it: pytest rewrites its asserts too, so a failure shows the
programs that differ.
"""

import os

import pytest

pytest.register_assert_rewrite("snippet_outcomes")

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("SCIPY_ARRAY_API", "1")
