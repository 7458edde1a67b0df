"""``import tensorweaver`` loads only the core (issue 16): linear algebra, special functions,
nn, optim and distributions load on first use, and then work as if imported eagerly.

Each check runs in a fresh interpreter, since this test process has imported everything.
Not a timing test: benchmarks/import_time.py measures the time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

LAZY_PARTS = (
    "tensorweaver.linalg",
    "tensorweaver.nn",
    "tensorweaver.optim",
    "tensorweaver.distributions",
    "tensorweaver.special",
    "tensorweaver.autograd.linalg_rules",
    "tensorweaver.autograd.special_rules",
)
HEAVY_LIBRARIES = ("torch", "scipy", "sklearn", "cupynumeric", "legate")


def run_fresh(code: str) -> str:
    """Run ``code`` in a new interpreter and return its stdout; fail with its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_loads_neither_the_optional_parts_nor_heavy_libraries() -> None:
    out = run_fresh(
        """
        import sys
        import tensorweaver
        print(" ".join(sorted(sys.modules)))
        """
    )
    loaded = set(out.split())
    assert "tensorweaver.tensor" in loaded  # the probe does see the core's modules
    assert sorted(loaded.intersection(LAZY_PARTS + HEAVY_LIBRARIES)) == []


def test_every_public_name_is_listed_and_resolves() -> None:
    out = run_fresh(
        """
        import json
        import tensorweaver as tw

        names = dir(tw)
        unresolved = [n for n in names if not hasattr(tw, n)]
        print(json.dumps({"names": names, "unresolved": unresolved}))
        """
    )
    listing = json.loads(out)
    assert listing["unresolved"] == []
    assert {"det", "svd", "inverse", "lu_unpack", "nn", "linalg", "special"} <= set(
        listing["names"]
    )


LINALG_FIRST = """
    import numpy as np
    import tensorweaver as tw

    a_np = np.array([[2.0, 0.5, 0.1], [0.3, 3.0, 0.2], [0.1, 0.4, 1.5]])
    want = np.linalg.det(a_np)
    a = tw.tensor(a_np, dtype=tw.float64, requires_grad=True)
    # The Tensor method first: it loads tw.linalg.
    assert np.isclose(a.det().item(), want)
    assert np.isclose(tw.det(a).item(), want)
    assert np.isclose(tw.linalg.det(a).item(), want)
    np.testing.assert_allclose(np.asarray(tw.inverse(a.detach())), np.linalg.inv(a_np))
    # A backward through a linear-algebra primitive: d det(A) / dA = det(A) inv(A)^T.
    tw.linalg.det(a).backward()
    np.testing.assert_allclose(np.asarray(a.grad), want * np.linalg.inv(a_np).T, rtol=1e-10)
    import tensorweaver.linalg
    from tensorweaver import nn

    layer = nn.Linear(3, 2)
    assert tuple(layer(a.detach().float()).shape) == (3, 2)
    assert tw.nn.Linear is nn.Linear
    """


SPECIAL_FIRST = """
    import math
    import sys

    import numpy as np
    import tensorweaver as tw

    points = [0.3, 1.7, 4.2]
    x = tw.tensor(points, dtype=tw.float64, requires_grad=True)
    # A backward through a special primitive before anything loaded tw.linalg: the rule table
    # completes itself on this first lookup. d lgamma(x) / dx by central differences.
    tw.lgamma(x).sum().backward()
    h = 1e-6
    fd = [(math.lgamma(p + h) - math.lgamma(p - h)) / (2 * h) for p in points]
    np.testing.assert_allclose(np.asarray(x.grad), fd, rtol=1e-7)
    z_np = np.array([-0.6, 0.1, 0.8])
    z = tw.tensor(z_np, dtype=tw.float64, requires_grad=True)
    tw.special.erfinv(z).sum().backward()
    with tw.no_grad():
        up = np.asarray(tw.special.erfinv(tw.tensor(z_np + h, dtype=tw.float64)))
        down = np.asarray(tw.special.erfinv(tw.tensor(z_np - h, dtype=tw.float64)))
    np.testing.assert_allclose(np.asarray(z.grad), (up - down) / (2 * h), rtol=1e-6)
    assert "tensorweaver.nn" not in sys.modules
    """


@pytest.mark.parametrize("code", [LINALG_FIRST, SPECIAL_FIRST], ids=["linalg", "special"])
def test_lazy_parts_work_on_first_use(code: str) -> None:
    run_fresh(code)
