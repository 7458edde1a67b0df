"""A seeded sweep of ``tw.linalg`` and the older spellings against PyTorch, called from the
outside as a demanding user would: every dtype (float32/64, complex64/128), batches
(including empty ones and 0x0 matrices), non-contiguous inputs (transposed, sliced,
broadcast), the keywords, the result types, the gradients and the errors.

The suite runs a deterministic share of the cases (``TW_SWEEP_SHARE``, default 1 in 6;
``TW_SWEEP_SHARE=1`` runs them all); every defect the sweep found is also a named test at
the end of the file."""

from __future__ import annotations

import math
import os
import re
import zlib
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import builtin_class

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SHARE = int(os.environ.get("TW_SWEEP_SHARE", "6"))
TOL = {"float32": 3e-4, "complex64": 3e-4, "float64": 1e-8, "complex128": 1e-8, "int64": 0}
REAL = {"complex64": "float32", "complex128": "float64"}


# --- inputs: kinds of matrices, as host arrays ------------------------------------------------


def array(kind: str, shape: tuple, dtype: str, seed: int) -> np.ndarray:
    """A host array of ``shape``: ``gen`` (square ones well conditioned), ``spd``
    (Hermitian positive-definite), ``herm``, ``lower``/``upper`` (well-conditioned
    triangles), ``vec`` (plain values), ``int`` (small integers)."""
    rng = np.random.default_rng(seed)
    if kind == "int":
        return rng.integers(0, 4, shape).astype(dtype)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    if kind in ("singular", "notpd"):  # batch element 1 (of 3) singular / indefinite
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
        # a zero row and column: an exact zero pivot in every LAPACK's order and ours (a
        # repeated one leaves an exact zero only on some CPUs' kernels: on one Intel machine
        # torch's determinant of such a matrix was -6.7e-16, NumPy's 0, and their inverses
        # differed by a third, both noise)
        a[1, :, -1] = 0
        a[1, -1, :] = 0
        return a.astype(dtype)
    if kind == "vec" or len(shape) < 2:
        return a.astype(dtype)
    n = shape[-1]
    eye = np.eye(n) if shape[-1] == shape[-2] else 0
    if kind == "gen":
        a = a + 3 * eye
    elif kind == "spd":
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * eye
    elif kind == "herm":
        a = a + np.conj(np.swapaxes(a, -1, -2)) + np.diag(np.arange(n) * 3.0)
    elif kind in ("lower", "upper"):  # a real diagonal, as a Cholesky factor has
        a = (np.tril if kind == "lower" else np.triu)(a) + 3 * eye
        a = a - 1j * np.imag(a * np.eye(n)) if np.iscomplexobj(a) else a
    return a.astype(dtype)


def layout(m: Any, a: np.ndarray, how: str, grad: bool) -> tuple[Any, Any]:
    """``a`` as a tensor laid out ``how`` (contiguous, ``T`` a transposed view, ``slice``
    every other column of a wider tensor, ``expand`` a broadcast batch): (leaf, input)."""
    dtype = getattr(m, a.dtype.name)
    if how == "T" and a.ndim >= 2:
        leaf = m.tensor(np.swapaxes(a, -1, -2).copy(), dtype=dtype, requires_grad=grad)
        return leaf, leaf.mT
    if how == "slice" and a.ndim >= 1:
        wide = np.zeros((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)
        wide[..., ::2] = a
        leaf = m.tensor(wide, dtype=dtype, requires_grad=grad)
        return leaf, leaf[..., ::2]
    if how == "expand" and a.ndim >= 3 and a.shape[0] > 1:
        leaf = m.tensor(a[:1].copy(), dtype=dtype, requires_grad=grad)
        return leaf, leaf.expand(*a.shape)
    leaf = m.tensor(a, dtype=dtype, requires_grad=grad)
    return leaf, leaf


# --- comparison ---------------------------------------------------------------------------------


def host(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().resolve_conj().resolve_neg().numpy()
    # (resolved: torch's np.asarray refuses them too)
    return np.asarray(x.detach().resolve_conj().resolve_neg())


def name_of(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.").removeprefix("tensorweaver.")


def same(ours: Any, theirs: Any, tol: float, path: str) -> None:
    """Structure (named tuples' type and fields), dtype, shape and values as PyTorch's."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tw.Tensor), f"{path}: {type(ours).__name__}, not a tensor"
        assert name_of(ours.dtype) == name_of(theirs.dtype), (
            f"{path}: dtype {name_of(ours.dtype)}, PyTorch {name_of(theirs.dtype)}"
        )
        assert tuple(ours.shape) == tuple(theirs.shape), (
            f"{path}: shape {tuple(ours.shape)}, PyTorch {tuple(theirs.shape)}"
        )
        a, b = host(ours), host(theirs)
        if b.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b, err_msg=path)
            return
        finite = np.isfinite(b)
        assert (np.isfinite(a) == finite).all(), f"{path}: non-finite elsewhere: {a} vs {b}"
        scale = max(1.0, float(np.abs(b[finite]).max(initial=0.0)))
        np.testing.assert_allclose(a[finite], b[finite], atol=tol * scale, rtol=tol, err_msg=path)
    elif isinstance(theirs, tuple):
        assert isinstance(ours, tuple), f"{path}: {type(ours).__name__}, PyTorch a tuple"
        assert len(ours) == len(theirs), f"{path}: {len(ours)} results, PyTorch {len(theirs)}"
        fields = getattr(type(theirs), "_fields", None)
        if type(theirs).__module__ == "torch.return_types":
            assert type(ours).__name__ == type(theirs).__name__, (
                f"{path}: {type(ours).__name__}, PyTorch {type(theirs).__name__}"
            )
            fields = [f for f in dir(theirs) if not f.startswith("_") and f[0].islower()]
            fields = [f for f in fields if f not in ("count", "index", "n_fields")]
            fields = [f for f in fields if not f.startswith("n_")]
        for f in fields or ():
            assert hasattr(ours, f), f"{path}: no field {f!r}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            same(a, b, tol, f"{path}[{i}]")
    else:
        assert type(ours) is type(theirs), f"{path}: {ours!r}, PyTorch {theirs!r}"
        assert ours == pytest.approx(theirs, rel=tol), f"{path}: {ours} != {theirs}"


def tensors(x: Any) -> list:
    if isinstance(x, tuple):
        return [t for y in x for t in tensors(y)]
    return [x] if hasattr(x, "dtype") else []


def loss(m: Any, out: Any, seed: int) -> Any:
    """A real weighting of every floating output (complex ones by real and imaginary parts)."""
    total = 0
    rng = np.random.default_rng(seed)
    for t in tensors(out):
        w, w2 = rng.standard_normal((2, *t.shape))
        if not (t.dtype.is_floating_point or t.dtype.is_complex) or not t.requires_grad:
            continue
        if t.dtype.is_complex:
            total = total + (m.real(t) * m.tensor(w) + m.imag(t) * m.tensor(w2)).sum()
        else:
            total = total + (t * m.tensor(w, dtype=t.dtype)).sum()
    return total


class Case:
    """One call: ``fn(m, *inputs)`` over host arrays ``kinds`` of ``shapes``; ``canon``
    maps a result to a unique one (vectors' signs and phases); ``grad``: compare the
    gradients too (float64/complex128 only)."""

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        inputs: list[tuple[str, tuple]],
        dtype: str,
        layout: str = "C",
        grad: bool = True,
        canon: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        self.name, self.fn, self.inputs, self.dtype = name, fn, inputs, dtype
        self.empty = any(0 in shape for _, shape in inputs)
        self.layout, self.canon = layout, canon
        self.grad = grad and dtype in ("float64", "complex128")
        shapes = ",".join("x".join(map(str, s)) for _, s in inputs)
        self.id = f"{name}-{dtype}-{shapes}-{layout}"

    def arrays(self) -> list[np.ndarray]:
        seed = zlib.crc32(self.id.encode())
        dtype = self.dtype
        return [
            array(kind, shape, "int64" if kind == "int" else dtype, seed + i)
            for i, (kind, shape) in enumerate(self.inputs)
        ]

    def call(self, m: Any, arrays: list[np.ndarray]) -> tuple[Any, list, BaseException | None]:
        grad = self.grad and all(a.dtype.kind in "fc" for a in arrays)
        pairs = [layout(m, a, self.layout if i == 0 else "C", grad) for i, a in enumerate(arrays)]
        leaves = [p[0] for p in pairs]
        try:
            out = self.fn(m, *(p[1] for p in pairs))
        except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
            return None, leaves, e
        if self.canon is not None:
            out = self.canon(m, out)
        return out, leaves, None

    def check(self) -> None:
        arrays = self.arrays()
        theirs, t_leaves, t_err = self.call(torch, arrays)
        ours, o_leaves, o_err = self.call(tw, arrays)
        if t_err is not None:
            same_error(o_err, t_err, self.id)
            return
        assert o_err is None, f"{self.id}: raised {o_err!r}, PyTorch did not"
        same(ours, theirs, TOL[self.dtype], self.id)
        if not self.grad:
            return
        lt = loss(torch, theirs, 1)
        if not isinstance(lt, torch.Tensor):
            return
        try:
            lt.backward()
        except RuntimeError as e:
            if "not differentiable" in str(e):  # a case PyTorch refuses: so must we
                with pytest.raises(builtin_class(e)):
                    loss(tw, ours, 1).backward()
            return  # else a fault of PyTorch's own (cond's in-place inverse)
        loss(tw, ours, 1).backward()
        for i, (a, b) in enumerate(zip(o_leaves, t_leaves)):
            if b.grad is None:
                continue
            assert a.grad is not None, f"{self.id}: no gradient for input {i}"
            same(a.grad, b.grad, 1e-6, f"{self.id}: gradient of input {i}")


def same_error(ours: BaseException | None, theirs: BaseException, what: str) -> None:
    """The class PyTorch raises (LinAlgError for LinAlgError) and its message's gist: the
    batch element, and singular / positive-definite."""
    assert ours is not None, f"{what}: PyTorch raised {theirs!r}, we did not"
    if isinstance(theirs, torch.linalg.LinAlgError):
        assert isinstance(ours, tw.linalg.LinAlgError), f"{what}: {ours!r} for {theirs!r}"
    else:
        assert isinstance(ours, builtin_class(theirs)), f"{what}: {ours!r} for {theirs!r}"
    mine, want = str(ours).lower(), str(theirs).lower()
    batch = re.search(r"batch element (\d+)", want)
    if batch:
        assert f"batch element {batch.group(1)}" in mine, f"{what}: {ours} for {theirs}"
    for word in ("singular", "positive-definite"):
        if word in want:
            assert word in mine, f"{what}: {ours!r} lacks {word!r} ({theirs!r})"


# --- the cases ----------------------------------------------------------------------------------

DTYPES = ("float32", "float64", "complex64", "complex128")
LAYOUTS = ("C", "T", "slice", "expand")
SQUARE = ((3, 3), (2, 3, 3), (0, 3, 3), (2, 0, 0), (2, 1, 2, 2))
WIDE = ((3, 4), (2, 3, 5), (0, 2, 3), (2, 4, 2), (2, 0, 3))


def absolute(*fields: int) -> Callable[[Any, Any], Any]:
    """The results with ``fields`` (vectors known up to a sign or phase) as magnitudes."""

    def canon(m: Any, out: Any) -> Any:
        return tuple(x.abs() if i in fields else x for i, x in enumerate(out))

    return canon


def svd_canon(m: Any, out: Any) -> Any:
    """U's and Vh's first k = min(m, n) vectors as magnitudes (the rest are any basis)."""
    u, s, vh = out
    k = s.shape[-1]
    return (u[..., :k].abs(), s, vh[..., :k, :].abs())


def old_svd_canon(m: Any, out: Any) -> Any:
    """``torch.svd``'s U and V: their first k = min(m, n) columns as magnitudes."""
    u, s, v = out
    k = s.shape[-1]
    return (u[..., :k].abs(), s, v[..., :k].abs())


def family(
    name: str,
    fn: Callable[..., Any],
    kinds: tuple[str, ...],
    shapes: tuple,
    dtypes: tuple[str, ...] = DTYPES,
    layouts: tuple[str, ...] = LAYOUTS,
    **options: Any,
) -> list[Case]:
    """``fn`` over every dtype and shape; the first operand laid out in turn contiguous,
    transposed, sliced and broadcast. ``shapes`` holds one shape per case, or a tuple of
    shapes (one per operand)."""
    out = []
    for i, dtype in enumerate(dtypes):
        for j, shape in enumerate(shapes):
            shape = shape if isinstance(shape[0], tuple) else (shape,)
            inputs = list(zip(kinds, shape))
            how = layouts[(i + j) % len(layouts)]
            out.append(Case(name, fn, inputs, dtype, how, **options))
    return out


def rhs(shapes: tuple, k: int = 2, left: bool = True) -> tuple:
    """(A's shape, B's shape) pairs: B with ``k`` columns (rows where not ``left``)."""
    return tuple((s, (*s[:-1], k) if left else (*s[:-2], k, s[-1])) for s in shapes)


def linalg_cases() -> list[Case]:
    L = tw.linalg  # noqa: N806  (only to read the names below)
    del L
    c: list[Case] = []
    c += family("det", lambda m, a: m.linalg.det(a), ("gen",), SQUARE)
    c += family("torch.det", lambda m, a: m.det(a), ("gen",), SQUARE)
    c += family("slogdet", lambda m, a: m.linalg.slogdet(a), ("gen",), SQUARE)
    c += family("torch.slogdet", lambda m, a: m.slogdet(a), ("gen",), SQUARE)
    c += family("logdet", lambda m, a: m.logdet(a), ("spd",), SQUARE)
    c += family("inv", lambda m, a: m.linalg.inv(a), ("gen",), SQUARE)
    c += family("inverse", lambda m, a: m.inverse(a), ("gen",), SQUARE)
    c += family("inv_ex", lambda m, a: m.linalg.inv_ex(a), ("gen",), SQUARE)
    for left in (True, False):
        c += family(
            f"solve-left{left}",
            lambda m, a, b, left=left: m.linalg.solve(a, b, left=left),
            ("gen", "vec"),
            rhs(SQUARE, left=left),
        )
    c += family("solve_ex", lambda m, a, b: m.linalg.solve_ex(a, b), ("gen", "vec"), rhs(SQUARE))
    c += family(
        "solve-vector", lambda m, a, b: m.linalg.solve(a, b), ("gen", "vec"), (((3, 3), (3,)),)
    )
    for upper in (True, False):
        for left in (True, False):
            for uni in (False, True):

                def st(m, a, b, upper=upper, left=left, uni=uni):  # noqa: ANN001, ANN202
                    return m.linalg.solve_triangular(
                        a, b, upper=upper, left=left, unitriangular=uni
                    )

                kind = "upper" if upper else "lower"
                c += family(
                    f"solve_triangular-u{upper}-l{left}-uni{uni}",
                    st,
                    (kind, "vec"),
                    rhs(SQUARE[:4], left=left),
                )
        for transpose in (False, True):

            def ts(m, b, a, upper=upper, transpose=transpose):  # noqa: ANN001, ANN202
                return m.triangular_solve(b, a, upper=upper, transpose=transpose)

            c += family(
                f"triangular_solve-u{upper}-t{transpose}",
                ts,
                ("vec", "upper" if upper else "lower"),
                tuple((b, a) for a, b in rhs(SQUARE[:4])),
            )
        c += family(
            f"cholesky-upper{upper}",
            lambda m, a, upper=upper: m.linalg.cholesky(a, upper=upper),
            ("spd",),
            SQUARE,
        )
        c += family(
            f"torch.cholesky-upper{upper}",
            lambda m, a, upper=upper: m.cholesky(a, upper=upper),
            ("spd",),
            SQUARE,
        )
        c += family(
            f"cholesky_solve-upper{upper}",
            lambda m, b, a, upper=upper: m.cholesky_solve(b, a, upper=upper),
            ("vec", "upper" if upper else "lower"),
            tuple((b, a) for a, b in rhs(SQUARE[:4])),
        )
        c += family(
            f"cholesky_inverse-upper{upper}",
            lambda m, a, upper=upper: m.cholesky_inverse(a, upper=upper),
            ("upper" if upper else "lower",),
            SQUARE[:2],
        )
    c += family("cholesky_ex", lambda m, a: m.linalg.cholesky_ex(a), ("spd",), SQUARE)
    for mode in ("reduced", "complete", "r"):
        c += family(
            f"qr-{mode}",
            lambda m, a, mode=mode: m.linalg.qr(a, mode=mode),
            ("gen",),
            WIDE + tuple(s[:-2] + s[-1:-3:-1] for s in WIDE),
            grad=mode != "r",
        )
    c += family("torch.qr", lambda m, a: m.qr(a), ("gen",), WIDE)
    for uplo in ("L", "U"):
        c += family(
            f"eigh-{uplo}",
            lambda m, a, uplo=uplo: m.linalg.eigh(a, UPLO=uplo),
            ("herm",),
            SQUARE,
            canon=absolute(1),
        )
        c += family(
            f"eigvalsh-{uplo}",
            lambda m, a, uplo=uplo: m.linalg.eigvalsh(a, UPLO=uplo),
            ("herm",),
            SQUARE,
        )
    c += family("eig", lambda m, a: m.linalg.eig(a), ("herm",), SQUARE, canon=absolute(1))
    c += family("eigvals", lambda m, a: m.linalg.eigvals(a), ("herm",), SQUARE)
    for full in (True, False):
        c += family(
            f"svd-full{full}",
            lambda m, a, full=full: m.linalg.svd(a, full_matrices=full),
            ("gen",),
            WIDE,
            canon=svd_canon,
        )
    c += family("svdvals", lambda m, a: m.linalg.svdvals(a), ("gen",), WIDE)
    for some in (True, False):
        c += family(
            f"torch.svd-some{some}",
            lambda m, a, some=some: m.svd(a, some=some),
            ("gen",),
            WIDE,
            canon=old_svd_canon,
        )
    c += family(
        "torch.svd-nouv", lambda m, a: m.svd(a, compute_uv=False), ("gen",), WIDE, grad=False
    )
    for hermitian in (False, True):
        c += family(
            f"pinv-h{hermitian}",
            lambda m, a, h=hermitian: m.linalg.pinv(a, hermitian=h),
            ("herm" if hermitian else "gen",),
            SQUARE if hermitian else WIDE,
        )
        c += family(
            f"matrix_rank-h{hermitian}",
            lambda m, a, h=hermitian: m.linalg.matrix_rank(a, hermitian=h),
            ("herm" if hermitian else "gen",),
            SQUARE if hermitian else WIDE,
        )
    c += family("pinv-atol-rtol", lambda m, a: m.linalg.pinv(a, atol=0.5, rtol=0.1), ("gen",), WIDE)
    c += family("pinv-rcond", lambda m, a: m.linalg.pinv(a, rcond=0.2), ("gen",), WIDE)
    c += family("pinverse", lambda m, a: m.pinverse(a), ("gen",), WIDE)
    c += family(
        "matrix_rank-tol", lambda m, a: m.linalg.matrix_rank(a, atol=1.0, rtol=0.2), ("gen",), WIDE
    )
    tall = tuple(s[:-2] + s[-1:-3:-1] for s in WIDE)
    c += family(
        "lstsq", lambda m, a, b: m.linalg.lstsq(a, b), ("gen", "vec"), rhs(tall), grad=False
    )
    for driver in ("gelsd", "gelss", "gelsy"):
        c += family(
            f"lstsq-{driver}",
            lambda m, a, b, d=driver: m.linalg.lstsq(a, b, driver=d),
            ("gen", "vec"),
            rhs(tall[:2]),
            grad=False,
        )
    c += family(
        "lstsq-solution", lambda m, a, b: m.linalg.lstsq(a, b).solution, ("gen", "vec"), rhs(tall)
    )
    for n in (0, 1, 3, -2):
        c += family(
            f"matrix_power-{n}", lambda m, a, n=n: m.linalg.matrix_power(a, n), ("gen",), SQUARE
        )
    c += family("matrix_exp", lambda m, a: m.linalg.matrix_exp(a * 0.3), ("vec",), SQUARE)
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf")):
        c += family(
            f"matrix_norm-{ord_}",
            lambda m, a, o=ord_: m.linalg.matrix_norm(a, ord=o),
            ("gen",),
            WIDE[:2] + ((2, 0, 0), (2, 3, 0)),
        )
    c += family(
        "matrix_norm-dim-keepdim",
        lambda m, a: m.linalg.matrix_norm(a, dim=(0, -1), keepdim=True),
        ("gen",),
        ((2, 3, 4),),
    )
    for ord_ in (0, 1, 2, 3.5, float("inf"), -float("inf"), -1):
        c += family(
            f"vector_norm-{ord_}",
            lambda m, a, o=ord_: m.linalg.vector_norm(a, ord=o),
            ("vec",),
            ((3, 4), (2, 3, 5)),
        )
        c += family(
            f"vector_norm-dim-{ord_}",
            lambda m, a, o=ord_: m.linalg.vector_norm(a, ord=o, dim=(0, -1), keepdim=True),
            ("vec",),
            ((2, 3, 5),),
        )
    for ord_ in (None, "fro", "nuc", 2, float("inf")):
        c += family(
            f"norm-{ord_}", lambda m, a, o=ord_: m.linalg.norm(a, ord=o), ("gen",), WIDE[:2]
        )
    c += family("norm-vector-dim", lambda m, a: m.linalg.norm(a, 3, dim=1), ("gen",), WIDE[:2])
    for p in (None, "fro", "nuc", 1, -2, float("inf")):
        shapes = SQUARE[:2] + ((2, 0, 0), (0, 3))
        c += family(f"cond-{p}", lambda m, a, p=p: m.linalg.cond(a, p), ("gen",), shapes)
    c += family("cross", lambda m, a, b: m.linalg.cross(a, b), ("vec", "vec"), (((4, 3), (4, 3)),))
    c += family(
        "cross-dim",
        lambda m, a, b: m.linalg.cross(a, b, dim=0),
        ("vec", "vec"),
        (((3, 4), (3, 1)),),
    )
    c += family(
        "multi_dot",
        lambda m, a, b, d: m.linalg.multi_dot([a, b, d]),
        ("vec", "vec", "vec"),
        (((3,), (3, 4), (4, 2)), ((2, 3), (3, 4), (4,))),
    )
    c += family(
        "householder_product",
        lambda m, a, t: m.linalg.householder_product(a, t),
        ("vec", "vec"),
        (((4, 3), (3,)), ((2, 4, 3), (2, 2))),
    )
    c += family("orgqr", lambda m, a, t: m.orgqr(a, t), ("vec", "vec"), (((4, 3), (3,)),))
    for pivot in (True,):
        c += family(f"lu-{pivot}", lambda m, a: m.linalg.lu(a), ("gen",), WIDE + SQUARE)
    c += family("lu_factor", lambda m, a: m.linalg.lu_factor(a), ("gen",), SQUARE)
    c += family("lu_factor_ex", lambda m, a: m.linalg.lu_factor_ex(a), ("gen",), SQUARE)
    for left in (True, False):
        for adjoint in (False, True):

            def lus(m, a, b, left=left, adjoint=adjoint):  # noqa: ANN001, ANN202
                lu, piv = m.linalg.lu_factor(a)
                return m.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint)

            c += family(
                f"lu_solve-l{left}-a{adjoint}", lus, ("gen", "vec"), rhs(SQUARE[:4], left=left)
            )
    c += family(
        "torch.lu_solve",
        lambda m, a, b: m.lu_solve(b, *m.linalg.lu_factor(a)),
        ("gen", "vec"),
        rhs(SQUARE[:2]),
    )
    c += family("lu_unpack", lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)), ("gen",), SQUARE[:3])
    c += family("vander", lambda m, x: m.linalg.vander(x), ("vec",), ((4,), (2, 3)))
    c += family("vander-N", lambda m, x: m.linalg.vander(x, N=5), ("vec",), ((4,), (2, 3)))
    c += family("vecdot", lambda m, a, b: m.linalg.vecdot(a, b), ("vec", "vec"), (((2, 3), (3,)),))
    c += family(
        "vecdot-dim",
        lambda m, a, b: m.linalg.vecdot(a, b, dim=0),
        ("vec", "vec"),
        (((3, 2), (3, 2)),),
    )
    c += family(
        "diagonal",
        lambda m, a: m.linalg.diagonal(a, offset=1, dim1=0, dim2=-1),
        ("vec",),
        ((3, 2, 4),),
    )
    c += family("tensorinv", lambda m, a: m.linalg.tensorinv(a, ind=1), ("gen",), ((4, 2, 2),))
    c += family(
        "tensorsolve",
        lambda m, a, b: m.linalg.tensorsolve(a, b),
        ("vec", "vec"),
        (((2, 3, 6), (2, 3)),),
        layouts=("C", "T", "slice"),  # a broadcast A is singular
    )
    c += family("matmul", lambda m, a, b: m.linalg.matmul(a, b), ("vec", "vec"), rhs(SQUARE))
    return c + error_cases() + out_cases()


def real_of(m: Any, t: Any) -> Any:
    """The real dtype of ``t``'s precision."""
    return t.real.dtype if t.dtype.is_complex else t.dtype


def complex_of(m: Any, t: Any) -> Any:
    """The complex dtype of ``t``'s precision."""
    return m.complex64 if real_of(m, t) == m.float32 else m.complex128


def out_cases() -> list[Case]:
    """``out=``: the result written into given tensors (resized from empty, of the result's
    dtype); a wrong dtype and inputs that require grad raise RuntimeError."""
    c: list[Case] = []

    def empty(m: Any, dtype: Any) -> Any:
        return m.empty(0, dtype=dtype)

    one = {
        "det": lambda m, a: m.linalg.det(a, out=empty(m, a.dtype)),
        "inv": lambda m, a: m.linalg.inv(a, out=empty(m, a.dtype)),
        "solve": lambda m, a: m.linalg.solve(a, a, out=empty(m, a.dtype)),
        "cholesky": lambda m, a: m.linalg.cholesky(a @ a.mH, out=empty(m, a.dtype)),
        "pinv": lambda m, a: m.linalg.pinv(a, out=empty(m, a.dtype)),
        "matrix_power": lambda m, a: m.linalg.matrix_power(a, 2, out=empty(m, a.dtype)),
        "vector_norm": lambda m, a: m.linalg.vector_norm(a, 3, out=empty(m, real_of(m, a))),
        "matrix_norm": lambda m, a: m.linalg.matrix_norm(a, out=empty(m, real_of(m, a))),
        "svdvals": lambda m, a: m.linalg.svdvals(a, out=empty(m, real_of(m, a))),
        "matmul": lambda m, a: m.linalg.matmul(a, a, out=empty(m, a.dtype)),
        "eigvals": lambda m, a: m.linalg.eigvals(a, out=empty(m, complex_of(m, a))),
        "solve_triangular": lambda m, a: m.linalg.solve_triangular(
            a, a, upper=True, out=empty(m, a.dtype)
        ),
        "wrong-dtype": lambda m, a: m.linalg.det(a, out=empty(m, m.float16)),
        "matrix_rank": lambda m, a: m.linalg.matrix_rank(a, out=empty(m, m.int64)),
        # those PyTorch fills by a copy take any dtype the result casts to
        "cond-cast": lambda m, a: m.linalg.cond(a, out=empty(m, m.complex128)),
        "matrix_rank-cast": lambda m, a: m.linalg.matrix_rank(a, out=empty(m, m.float32)),
        "eigvals-cast": lambda m, a: m.linalg.eigvals(a, out=empty(m, m.complex64)),
        "tensorinv-cast": lambda m, a: m.linalg.tensorinv(a, 1, out=empty(m, m.complex128)),
    }
    for name, fn in one.items():
        c += family(f"out-{name}", fn, ("gen",), ((3, 3), (2, 3, 3)))
    # the values written, of inputs that do not require grad (which out= refuses here)
    cast = {
        "pinv-cast": lambda m, a: m.linalg.pinv(a, out=empty(m, m.complex128)),
        "householder_product-cast": lambda m, a: m.linalg.householder_product(
            a, a[..., 0, :2], out=empty(m, m.complex128)
        ),
    }
    for name, fn in cast.items():
        c += family(f"out-{name}", fn, ("gen",), ((3, 3), (2, 3, 3)), grad=False)
    several = {
        "slogdet": lambda m, a: m.linalg.slogdet(
            a, out=(empty(m, a.dtype), empty(m, real_of(m, a)))
        ),
        "eigh": lambda m, a: m.linalg.eigh(
            a + a.mH, out=(empty(m, real_of(m, a)), empty(m, a.dtype))
        ),
        "qr": lambda m, a: m.linalg.qr(a, out=(empty(m, a.dtype), empty(m, a.dtype))),
        "lu_factor": lambda m, a: m.linalg.lu_factor(a, out=(empty(m, a.dtype), empty(m, m.int32))),
        "inv_ex": lambda m, a: m.linalg.inv_ex(a, out=(empty(m, a.dtype), empty(m, m.int32))),
        "not-a-tuple": lambda m, a: m.linalg.qr(a, out=empty(m, a.dtype)),
        "eig-cast": lambda m, a: (
            m.linalg.eig(a, out=(empty(m, m.complex64), empty(m, m.complex64))).eigenvalues
        ),
    }
    for name, fn in several.items():
        canon = absolute(1) if name == "eigh" else None
        c += family(f"out-{name}", fn, ("gen",), ((3, 3), (2, 3, 3)), grad=False, canon=canon)
    return c


def error_cases() -> list[Case]:
    """Singular and indefinite batch elements, wrong shapes, integer dtypes."""
    c: list[Case] = []
    bad = ((3, 3, 3),)
    for name, fn in (
        ("inv", lambda m, a: m.linalg.inv(a)),
        ("solve", lambda m, a: m.linalg.solve(a, a)),
        ("lu_factor", lambda m, a: m.linalg.lu_factor(a)),
        ("inv-check_errors", lambda m, a: m.linalg.inv_ex(a, check_errors=True)),
        ("inv_ex-info", lambda m, a: m.linalg.inv_ex(a).info),
        ("matrix_power-neg", lambda m, a: m.linalg.matrix_power(a, -1)),
        ("inverse", lambda m, a: m.inverse(a)),
    ):
        c += family(f"singular-{name}", fn, ("singular",), bad, grad=False)
    for name, fn in (
        ("cholesky", lambda m, a: m.linalg.cholesky(a)),
        ("cholesky-upper", lambda m, a: m.linalg.cholesky(a, upper=True)),
        ("cholesky_ex-info", lambda m, a: m.linalg.cholesky_ex(a).info),
        ("cholesky_ex-check", lambda m, a: m.linalg.cholesky_ex(a, check_errors=True)),
        ("torch.cholesky", lambda m, a: m.cholesky(a)),
    ):
        c += family(f"notpd-{name}", fn, ("notpd",), bad, grad=False)
    shapes = {
        "det-nonsquare": (lambda m, a: m.linalg.det(a), ((2, 3),)),
        "det-vector": (lambda m, a: m.linalg.det(a), ((3,),)),
        "inv-nonsquare": (lambda m, a: m.linalg.inv(a), ((2, 2, 3),)),
        "cholesky-nonsquare": (lambda m, a: m.linalg.cholesky(a), ((3, 2),)),
        "eigh-nonsquare": (lambda m, a: m.linalg.eigh(a), ((3, 2),)),
        "eig-nonsquare": (lambda m, a: m.linalg.eig(a), ((3, 2),)),
        "matrix_exp-nonsquare": (lambda m, a: m.linalg.matrix_exp(a), ((3, 2),)),
        "matrix_power-nonsquare": (lambda m, a: m.linalg.matrix_power(a, 2), ((3, 2),)),
        "svd-vector": (lambda m, a: m.linalg.svd(a), ((3,),)),
        "qr-mode": (lambda m, a: m.linalg.qr(a, mode="full"), ((3, 3),)),
        "eigh-uplo": (lambda m, a: m.linalg.eigh(a, UPLO="X"), ((3, 3),)),
        "matrix_norm-ord": (lambda m, a: m.linalg.matrix_norm(a, ord=3), ((3, 3),)),
        "matrix_norm-vector": (lambda m, a: m.linalg.matrix_norm(a), ((3,),)),
        "vector_norm-str": (lambda m, a: m.linalg.vector_norm(a, ord="fro"), ((3,),)),
        "norm-3d-noDim": (lambda m, a: m.linalg.norm(a, ord="fro"), ((2, 3, 3),)),
        "cross-size": (lambda m, a: m.linalg.cross(a, a), ((3, 4),)),
        "matrix_rank-vector": (lambda m, a: m.linalg.matrix_rank(a), ((3,),)),
        "vander-0d": (lambda m, a: m.linalg.vander(a[0]), ((3,),)),
        "lstsq-driver": (lambda m, a: m.linalg.lstsq(a, a, driver="bad"), ((3, 3),)),
        "svd-driver": (lambda m, a: m.linalg.svd(a, driver="gesvd"), ((3, 3),)),
        "diagonal-dim": (lambda m, a: m.linalg.diagonal(a, dim1=0, dim2=0), ((3, 3),)),
    }
    for name, (fn, shape) in shapes.items():
        c += family(name, fn, ("gen",), shape, dtypes=("float64",), grad=False)
    two = {
        "solve-mismatch": (lambda m, a, b: m.linalg.solve(a, b), ((3, 3), (4, 2))),
        "solve-batch": (lambda m, a, b: m.linalg.solve(a, b), ((2, 3, 3), (3, 3, 2))),
        "solve_triangular-mismatch": (
            lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
            ((3, 3), (4, 2)),
        ),
        "solve_triangular-left": (
            lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True, left=False),
            ((3, 3), (3, 2)),
        ),
        "lstsq-rows": (lambda m, a, b: m.linalg.lstsq(a, b), ((4, 3), (3, 2))),
        "cholesky_solve-mismatch": (lambda m, b, a: m.cholesky_solve(b, a), ((4, 2), (3, 3))),
        "multi_dot-shapes": (lambda m, a, b: m.linalg.multi_dot([a, b]), ((3, 4), (3, 4))),
        "vecdot-shapes": (lambda m, a, b: m.linalg.vecdot(a, b), ((3, 4), (3, 5))),
    }
    for name, (fn, shape) in two.items():
        c += family(name, fn, ("gen", "gen"), (shape,), dtypes=("float64",), grad=False)
    mixed = {
        "solve-dtypes": lambda m, a, b: m.linalg.solve(a, b.float()),
        "solve_triangular-dtypes": lambda m, a, b: m.linalg.solve_triangular(
            a, b.float(), upper=False
        ),
        "matmul-dtypes": lambda m, a, b: m.linalg.matmul(a, b.float()),
    }
    for name, fn in mixed.items():  # errors: no gradient to check (nor to gradcheck)
        shapes = (((3, 3), (3, 2)),)
        c += family(name, fn, ("gen", "gen"), shapes, dtypes=("float64",), grad=False)
    ints = {
        "det": lambda m, a: m.linalg.det(a),
        "inv": lambda m, a: m.linalg.inv(a),
        "solve": lambda m, a: m.linalg.solve(a, a),
        "cholesky": lambda m, a: m.linalg.cholesky(a),
        "qr": lambda m, a: m.linalg.qr(a),
        "eigh": lambda m, a: m.linalg.eigh(a),
        "eig": lambda m, a: m.linalg.eig(a),
        "svd": lambda m, a: m.linalg.svd(a),
        "svdvals": lambda m, a: m.linalg.svdvals(a),
        "pinv": lambda m, a: m.linalg.pinv(a),
        "matrix_rank": lambda m, a: m.linalg.matrix_rank(a),
        "vector_norm": lambda m, a: m.linalg.vector_norm(a),
        "matrix_norm": lambda m, a: m.linalg.matrix_norm(a),
        "norm": lambda m, a: m.linalg.norm(a),
        "matrix_exp": lambda m, a: m.linalg.matrix_exp(a),
        "matrix_power": lambda m, a: m.linalg.matrix_power(a, 2),
        "lu_factor": lambda m, a: m.linalg.lu_factor(a),
        "slogdet": lambda m, a: m.linalg.slogdet(a),
        "cross": lambda m, a: m.linalg.cross(a, a),
        "vander": lambda m, a: m.linalg.vander(a[0]),
        "torch.det": lambda m, a: m.det(a),
        "torch.svd": lambda m, a: m.svd(a),
        "eigvalsh": lambda m, a: m.linalg.eigvalsh(a),
        "lu": lambda m, a: m.linalg.lu(a),
        "lu_factor_ex": lambda m, a: m.linalg.lu_factor_ex(a),
        "solve_triangular": lambda m, a: m.linalg.solve_triangular(a, a, upper=True),
        "triangular_solve": lambda m, a: m.triangular_solve(a, a),
        "cholesky_solve": lambda m, a: m.cholesky_solve(a, a),
        "cholesky_inverse": lambda m, a: m.cholesky_inverse(a),
        "householder_product": lambda m, a: m.linalg.householder_product(a, a[0]),
        "orgqr": lambda m, a: m.orgqr(a, a[0]),
        "cholesky_ex": lambda m, a: m.linalg.cholesky_ex(a),
        "inv_ex": lambda m, a: m.linalg.inv_ex(a),
        "lstsq": lambda m, a: m.linalg.lstsq(a, a),
        "eigvals": lambda m, a: m.linalg.eigvals(a),
        "cond": lambda m, a: m.linalg.cond(a),
        "tensorinv": lambda m, a: m.linalg.tensorinv(a, 1),
        "logdet": lambda m, a: m.logdet(a),
        "pinverse": lambda m, a: m.pinverse(a),
    }
    for name, fn in ints.items():
        c += family(f"int-{name}", fn, ("int",), ((3, 3),), dtypes=("int64",), grad=False)
    return c


CASES = linalg_cases()
BY_ID = {c.id: c for c in CASES}
SHARED = [c for c in CASES if zlib.crc32(c.id.encode()) % SHARE == 0]


def known_defect(case: Case, backend: str) -> str | None:
    """Why ``case`` fails today (a strict xfail), or None: every defect the sweep found is
    fixed, so none for now."""
    del case, backend
    return None


def run(case: Case, backend: str, request: pytest.FixtureRequest) -> None:
    reason = known_defect(case, backend)
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    case.check()


@pytest.mark.parametrize("case", SHARED, ids=[c.id for c in SHARED])
def test_sweep(backend: str, case: Case, request: pytest.FixtureRequest) -> None:
    run(case, backend, request)


CHEAP = [c for c in SHARED[::12] if not c.dtype.startswith("complex")]


@pytest.mark.cunumeric
@pytest.mark.parametrize("case", CHEAP, ids=[c.id for c in CHEAP])
def test_sweep_share_everywhere(backend: str, case: Case, request: pytest.FixtureRequest) -> None:
    """A few cases on every backend, cuPyNumeric included."""
    run(case, backend, request)


# --- the defects the sweep found, each by its case ------------------------------------------

REGRESSIONS = {
    # linalg.pinv had no ``rcond`` (PyTorch's older spelling of rtol): TypeError
    "pinv-rcond-float64-2x3x5-slice": None,
    "pinv-rcond-float32-3x4-C": None,
    # torch.slogdet's result was named linalg_slogdet, PyTorch's is slogdet
    "torch.slogdet-float64-2x3x3-slice": None,
    # vander of complex input: arange() of a complex dtype raised NotImplementedError
    "vander-complex128-2x3-C": None,
    "vander-N-complex64-4-slice": None,
    # NumPy's solve met an exact zero pivot where the host LU did not: raised NumPy's
    # LinAlgError('Singular matrix') with no batch element; PyTorch returns the solution
    "singular-inverse-float32-3x3x3-C": None,
    # cholesky_solve with B of other rows than A: NumPy's ValueError, PyTorch RuntimeError
    "cholesky_solve-mismatch-float64-4x2,3x3-C": None,
    # integer input to eigh, lu_factor (and the others whose PyTorch kernel refuses it):
    # RuntimeError where PyTorch raises NotImplementedError
    "int-eigh-int64-3x3-C": None,
    "int-lu_factor-int64-3x3-C": None,
    "int-solve_triangular-int64-3x3-C": None,
    # cholesky_solve's and cholesky_inverse's gradient of the factor was triangular on the
    # core's composition (numpy); PyTorch's formula gives the whole matrix one
    "cholesky_solve-upperTrue-float64-3x2,3x3-T": None,
    "cholesky_solve-upperFalse-float64-2x3x2,2x3x3-slice": None,
    "cholesky_inverse-upperFalse-float64-3x3-T": None,
    # matrix_power(A, 0) and vector_norm(x, 0) did not require grad where PyTorch's do
    # (with zero gradients): backward() raised
    "matrix_power-0-float64-2x3x3-slice": None,
    "matrix_power-0-complex128-2x0x0-slice": None,
    "vector_norm-0-float64-3x4-T": None,
    # complex input: every function but eig, eigvals and the products raised RuntimeError
    # ("Expected a floating point tensor"); now computed, gradients as PyTorch's
    "det-complex128-2x3x3-C": None,
    "inv-complex64-3x3-slice": None,
    "solve-leftFalse-complex128-2x3x3,2x2x3-C": None,  # torch's conjugate view (torch:cpu)
    "cholesky-upperTrue-complex128-2x3x3-C": None,
    "cholesky_solve-upperFalse-complex128-2x3x2,2x3x3-C": None,
    "eigh-U-complex128-2x3x3-C": None,
    "svd-fullFalse-complex128-2x3x5-C": None,
    "qr-reduced-complex128-2x3x5-C": None,
    "lu_solve-lFalse-aTrue-complex128-2x3x3,2x2x3-C": None,
    "pinv-hFalse-complex128-2x3x5-C": None,
    "lstsq-complex128-2x5x3,2x5x2-C": None,
    "matrix_exp-complex128-2x3x3-C": None,
    "vector_norm-3.5-complex128-2x3x5-C": None,
    "householder_product-complex128-2x4x3,2x2-C": None,
    # slogdet's sign took no gradient (and did not require grad, PyTorch's does)
    "slogdet-complex128-2x3x3-C": None,
    "logdet-complex128-2x3x3-C": None,
    # the host LU chose pivots by modulus; LAPACK's by |re| + |im| (other P, L, U)
    "lu-True-complex64-2x4x2-T": None,
    "lu_unpack-complex128-2x3x3-C": None,
    # out= was not taken by any tw.linalg or tw.fft function (TypeError)
    "out-det-float32-3x3-C": None,
    "out-eigh-complex128-2x3x3-C": None,
    "out-solve_triangular-float64-3x3-T": None,
    "out-matrix_norm-float64-3x3-T": None,  # composed in PyTorch: out joins the graph
    # cond, pinv, matrix_rank, eigvals, eig, tensorinv, householder_product refused an out=
    # of another dtype the result casts to (RuntimeError), which PyTorch's copy takes
    "out-cond-cast-float64-2x3x3-slice": None,
    "out-pinv-cast-complex64-3x3-slice": None,
    "out-matrix_rank-cast-float64-3x3-T": None,
    "out-eigvals-cast-complex128-2x3x3-C": None,
    "out-eig-cast-complex128-2x3x3-C": None,
    "out-tensorinv-cast-float64-3x3-T": None,
    "out-householder_product-cast-float64-3x3-T": None,
    # matrix norms 2, 1 and inf of empty matrices raised IndexError (amax of nothing), and
    # cond of any empty matrix; PyTorch's are 0
    "matrix_norm-2-float64-2x0x0-expand": None,
    "matrix_norm-1-complex128-2x3x0-slice": None,
    "matrix_norm-inf-float64-2x0x0-expand": None,
    "cond-None-float64-2x0x0-expand": None,
    "cond-1-float64-0x3-C": None,
    "cond--2-complex128-2x0x0-T": None,
    # vector_norm(ord='fro') computed a norm; PyTorch raises TypeError (ord is a number)
    "vector_norm-str-float64-3-C": None,
}


@pytest.mark.parametrize("case_id", list(REGRESSIONS))
def test_found_by_the_sweep(backend: str, case_id: str, request: pytest.FixtureRequest) -> None:
    run(BY_ID[case_id], backend, request)


GRADCHECKED = [
    c
    for c in CASES[::7]
    if c.dtype == "float64"
    and c.grad
    and not c.empty
    and known_defect(c, "numpy") is None
    # not those reading one triangle of a Hermitian input (their gradient is symmetrized)
    and not any(w in c.name for w in ("cholesky", "eigh", "eigvalsh", "-hTrue", "logdet"))
    and not c.name.startswith("out-")  # out= takes no part in autograd
]


@pytest.mark.parametrize("case", GRADCHECKED[::4], ids=[c.id for c in GRADCHECKED[::4]])
def test_gradcheck_share(backend: str, case: Case) -> None:
    """Finite differences agree with our gradients (a share of the float64 cases)."""
    arrays = case.arrays()
    pairs = [layout(tw, a, case.layout if i == 0 else "C", True) for i, a in enumerate(arrays)]
    leaves = [p[0] for p in pairs]

    def fn(*xs: Any) -> Any:
        views = [layout_like(x, p) for x, p in zip(xs, pairs)]
        out = case.fn(tw, *views)
        out = case.canon(tw, out) if case.canon is not None else out
        outs = tuple(t for t in tensors(out) if t.dtype.is_floating_point and t.requires_grad)
        return outs

    assert tw.autograd.gradcheck(fn, tuple(leaves), eps=1e-6, atol=1e-5)


def layout_like(x: Any, pair: tuple) -> Any:
    """The view ``pair`` (leaf, input) took, of ``x`` instead of the leaf."""
    leaf, inp = pair
    if inp is leaf:
        return x
    if tuple(inp.shape) == tuple(leaf.mT.shape) and inp.stride() == leaf.mT.stride():
        return x.mT
    if inp.shape[-1] * 2 == leaf.shape[-1]:
        return x[..., ::2]
    return x.expand(*inp.shape)


def _non_finite(value: float, where: str) -> np.ndarray:
    a = np.eye(3)
    if where == "diagonal":
        a[1, 1] = value
    else:
        a[2, 0] = a[0, 2] = value
    return a


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["diagonal", "corner"])
def test_cholesky_ex_info_of_non_finite(backend: str, value: float, where: str) -> None:
    """Found by the distributions' sweep: a NaN pivot gave info 0 on the host (NumPy carries
    on where LAPACK stops), so Wishart's check passed an infinite matrix; an all-inf matrix
    too (NumPy's blocked potrf makes no NaN of inf / inf)."""
    batch = np.stack([np.eye(3), _non_finite(value, where), np.full((3, 3), math.inf)])
    for a in (batch, batch[1], batch[2]):
        theirs = torch.linalg.cholesky_ex(torch.tensor(a)).info
        ours = tw.linalg.cholesky_ex(tw.tensor(a)).info
        assert ours.tolist() == theirs.tolist(), f"{a}: info {ours.tolist()}"
