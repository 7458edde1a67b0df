"""Regressions of a crash hunt (nineteenth session), each compared with torch 2.13 on CPU:
``grid_sample`` at NaN/infinite grid positions, adaptive max pooling of windows with NaNs
(PyTorch picks a window's last NaN), packed RNN input whose ``batch_sizes`` do not fit its
data, attention with head dim 0 and instance norm of empty inputs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
import torch.nn.functional as TF

NAN, INF = float("nan"), float("inf")


def _np(t: object) -> np.ndarray:
    return np.asarray(t.detach() if isinstance(t, tw.Tensor) else t.detach().numpy())


def _same(a: object, b: object) -> None:
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12, equal_nan=True)


def _grid_cases() -> list[tuple[int, float, str, str]]:
    cases = []
    for rank, modes in ((2, ("bilinear", "nearest", "bicubic")), (3, ("bilinear", "nearest"))):
        for value in (NAN, INF, -INF):
            for mode in modes:
                for padding in ("zeros", "border", "reflection"):
                    cases.append((rank, value, mode, padding))
    return cases


def _torch_backward_crashes(rank: int, value: float, mode: str, padding: str) -> bool:
    """torch 2.13's 2-D bilinear CPU backward segfaults at a NaN position with border
    padding, and at a NaN or infinite one with reflection padding: no gradient to compare."""
    if rank != 2 or mode != "bilinear":
        return False
    return (padding == "border" and value != value) or padding == "reflection"


@pytest.mark.parametrize("rank,value,mode,padding", _grid_cases())
def test_grid_sample_non_finite_grid_like_torch(
    backend: str, rank: int, value: float, mode: str, padding: str
) -> None:
    # Was (numpy): 0 for a NaN grid with zeros padding (torch NaN), 0 with reflection
    # (torch reads pixel 0), and the 3-D case failed in gather() with index -2**63.
    rng = np.random.default_rng(rank * 7 + len(mode) + len(padding))
    x = rng.standard_normal((1, 2) + (3,) * rank)
    grid = rng.uniform(-1.2, 1.2, (1,) + (2,) * rank + (rank,))
    grid[rng.random(grid.shape) < 0.5] = value
    grid[0, 0] = value  # one position non-finite in every component
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    wx, wg = tw.tensor(x, requires_grad=True), tw.tensor(grid, requires_grad=True)
    expected = TF.grid_sample(tx, tg, mode, padding, align_corners=False)
    got = F.grid_sample(wx, wg, mode, padding, align_corners=False)
    _same(got, expected)
    up = rng.standard_normal(tuple(expected.shape))
    if _torch_backward_crashes(rank, value, mode, padding):
        # torch gives no reference, and tw's torch:cpu backend once took the process down
        # through torch's kernel here: its gradients must be the numpy backend's
        (got * tw.tensor(up)).sum().backward()
        nx = tw.tensor(x, requires_grad=True, device="numpy")
        ng = tw.tensor(grid, requires_grad=True, device="numpy")
        out = F.grid_sample(nx, ng, mode, padding, align_corners=False)
        (out * tw.tensor(up, device="numpy")).sum().backward()
        np.testing.assert_array_equal(np.asarray(wx.grad.tolist()), np.asarray(nx.grad.tolist()))
        np.testing.assert_array_equal(np.asarray(wg.grad.tolist()), np.asarray(ng.grad.tolist()))
        return
    (expected * torch.tensor(up)).sum().backward()
    (got * tw.tensor(up)).sum().backward()
    _same(wx.grad, tx.grad)
    _same(wg.grad, tg.grad)


@pytest.mark.cunumeric
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adaptive_max_pool_takes_last_nan_like_torch(backend: str, nd: int) -> None:
    # Was: the index of a window's first NaN (torch's CPU kernel keeps its last one), so
    # indices and the gradient's destination differed.
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((2, 3) + (5,) * nd)
    x[rng.random(x.shape) < 0.4] = np.nan
    x[0, 0] = np.nan  # whole windows of NaN
    x[1, 1] = 0.0  # ties: the first maximum
    fn = f"adaptive_max_pool{nd}d"
    tx, wx = torch.tensor(x, requires_grad=True), tw.tensor(x, requires_grad=True)
    for size in (2, 3):
        t_out, t_idx = getattr(TF, fn)(tx, (size,) * nd, return_indices=True)
        w_out, w_idx = getattr(F, fn)(wx, (size,) * nd, return_indices=True)
        _same(w_out, t_out)
        np.testing.assert_array_equal(_np(w_idx), t_idx.numpy())
        up = rng.standard_normal(tuple(t_out.shape))
        (t_out * torch.tensor(up)).sum().backward()
        getattr(F, fn)(wx, (size,) * nd).mul(tw.tensor(up)).sum().backward()
        _same(wx.grad, tx.grad)


def _packed(mod: object, batch_sizes: list[int]) -> object:
    data = mod.ones(3, 4, dtype=mod.float64)
    return mod.nn.utils.rnn.PackedSequence(data, mod.tensor(batch_sizes))


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("batch_sizes", [[2, 2], [4], [1, 2], [3, 0], [0], [0, 0]])
def test_packed_batch_sizes_like_torch(backend: str, cls: str, batch_sizes: list[int]) -> None:
    # Was (numpy): [2, 2] and [4] over 3 rows computed a result (torch raises), [1, 2] an
    # IndexError, and [0] a ValueError (torch: empty results).
    results = []
    for mod in (torch, tw):
        mod.manual_seed(0)
        rnn = getattr(mod.nn, cls)(4, 3, 2, bidirectional=True).double()
        try:
            out, state = rnn(_packed(mod, batch_sizes))
        except RuntimeError:
            results.append("RuntimeError")
            continue
        h = state[0] if cls == "LSTM" else state
        results.append((tuple(out.data.shape), tuple(h.shape)))
    assert results[1] == results[0]


@pytest.mark.cunumeric
def test_attention_with_head_dim_zero_like_torch(backend: str) -> None:
    # Was: ZeroDivisionError from the default scale 1 / sqrt(0).
    rng = np.random.default_rng(0)
    arrays = rng.standard_normal((1, 2, 3, 0)), rng.standard_normal((1, 2, 4, 0))
    arrays += (rng.standard_normal((1, 2, 4, 5)),)
    for kwargs in ({}, {"is_causal": True}):
        ts = [torch.tensor(a, requires_grad=True) for a in arrays]
        ws = [tw.tensor(a, requires_grad=True) for a in arrays]
        expected = TF.scaled_dot_product_attention(*ts, **kwargs)
        got = F.scaled_dot_product_attention(*ws, **kwargs)
        _same(got, expected)
        expected.sum().backward()
        got.sum().backward()
        for w, t in zip(ws, ts):
            _same(w.grad, t.grad)


@pytest.mark.parametrize("shape", [(2, 3, 0), (2, 3, 0, 4), (0, 3, 4)])
def test_instance_norm_of_empty_input_like_torch(backend: str, shape: tuple[int, ...]) -> None:
    # Was: ValueError "more than 1 spatial element" for (2, 3, 0) (torch: an empty result).
    results = []
    for mod, functional in ((torch, TF), (tw, F)):
        x = mod.ones(*shape, dtype=mod.float64, requires_grad=True)
        weight = mod.ones(3, dtype=mod.float64, requires_grad=True)
        stats = mod.zeros(3, dtype=mod.float64), mod.ones(3, dtype=mod.float64)
        y = functional.instance_norm(x, *stats)
        # no spatial values: they stay; no sample: torch makes them NaN (str: NaN == NaN)
        moved = tuple(str(float(s.sum())) for s in stats)
        try:
            functional.instance_norm(x, weight=weight).sum().backward()
            grad = _np(weight.grad).tolist()
        except IndexError:  # torch, given no sample at all
            grad = "IndexError"
        results.append((tuple(y.shape), moved, grad))
    assert results[1] == results[0]
