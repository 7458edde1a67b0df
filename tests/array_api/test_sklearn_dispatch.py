"""scikit-learn estimators and SciPy functions with array API dispatch, on tensors: the same
results as on NumPy inputs (float64), and tensors back on the inputs' device."""

from __future__ import annotations

import os

# SciPy reads this once, when first imported; scikit-learn checks it on dispatch.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.special  # noqa: E402
import sklearn  # noqa: E402
import tensorweaver as tw  # noqa: E402
import tensorweaver.array_api as xp  # noqa: E402
from scipy._lib._array_api import SCIPY_ARRAY_API  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402

#: SciPy's dispatch is fixed when it is first imported: by an earlier test module, maybe.
needs_scipy_dispatch = pytest.mark.skipif(
    SCIPY_ARRAY_API != "1",
    reason="SciPy was imported before SCIPY_ARRAY_API=1 was set; run with SCIPY_ARRAY_API=1",
)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 5))
Y_CLASS = (X[:, 0] + 0.5 * RNG.normal(size=60) > 0).astype(np.int64) + (X[:, 1] > 1)
Y_REG = X @ RNG.normal(size=5) + 0.1 * RNG.normal(size=60)

ESTIMATORS = {
    "PCA": (lambda: PCA(n_components=3, svd_solver="full"), None, "transform"),
    "LDA": (lambda: LinearDiscriminantAnalysis(solver="svd"), Y_CLASS, "predict_proba"),
    "Ridge": (lambda: Ridge(alpha=0.5, solver="svd"), Y_REG, "predict"),
}


@pytest.fixture
def _dispatching(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")  # scikit-learn checks it on dispatch


def _fitted(name: str, x, y):
    make, _, method = ESTIMATORS[name]
    estimator = make().fit(x) if y is None else make().fit(x, y)
    return estimator, getattr(estimator, method)(x)


@needs_scipy_dispatch
@pytest.mark.cunumeric
@pytest.mark.usefixtures("_dispatching")
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimator_on_tensors_matches_numpy(backend: str, name: str) -> None:
    y = ESTIMATORS[name][1]
    reference, expected = _fitted(name, X, y)
    x_t = xp.asarray(X)
    y_t = None if y is None else xp.asarray(y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted, out = _fitted(name, x_t, y_t)
    assert isinstance(out, tw.Tensor) and out.device == x_t.device
    assert out.dtype == tw.float64
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-9, atol=1e-10)
    attribute = {"PCA": "components_", "LDA": "coef_", "Ridge": "coef_"}[name]
    np.testing.assert_allclose(
        np.asarray(getattr(fitted, attribute)),
        getattr(reference, attribute),
        rtol=1e-9,
        atol=1e-10,
    )


@pytest.mark.usefixtures("_dispatching")
def test_dispatch_finds_the_namespace(backend: str) -> None:
    from sklearn.utils._array_api import get_namespace

    with sklearn.config_context(array_api_dispatch=True):
        namespace, is_array_api = get_namespace(xp.asarray(X))
    assert is_array_api and namespace is xp


@needs_scipy_dispatch
@pytest.mark.parametrize("name", ["logsumexp", "softmax", "erf", "expit", "xlogy"])
def test_scipy_special_on_tensors(backend: str, name: str) -> None:
    function = getattr(scipy.special, name)
    x = np.linspace(-2.0, 2.0, 9)
    args = (x, np.abs(x)) if name == "xlogy" else (x,)
    out = function(*(xp.asarray(a) for a in args))
    assert isinstance(out, tw.Tensor) and out.device == tw.device(backend)
    np.testing.assert_allclose(np.asarray(out), function(*args), rtol=1e-12, atol=1e-14)
