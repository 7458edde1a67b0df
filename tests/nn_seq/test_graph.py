"""Graph layers against dense NumPy float64 formulas, and their gradients against finite
differences. The test graph has a duplicate edge, an existing self loop and nodes without
in-edges."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from seq_reference import assert_close, check_gradients, host
from tensorweaver.nn.modules.graph import GATConv, GCNConv, GINConv, SAGEConv
from tensorweaver.nn.modules.linear import Linear

rng = np.random.default_rng(0)
N, F_IN, F_OUT = 5, 3, 4
# Edges j -> i as columns (j, i): 3 -> 1 twice, a self loop 1 -> 1; nodes 3, 4 get no edges.
EDGES = np.array([[0, 1, 2, 3, 3, 1, 0], [1, 2, 0, 1, 1, 1, 2]], dtype=np.int64)


def adjacency(edges: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """Dense ``A[i, j]``: the summed weight of the edges j -> i."""
    a = np.zeros((N, N))
    np.add.at(a, (edges[1], edges[0]), 1.0 if weight is None else weight)
    return a


def params(module) -> dict[str, np.ndarray]:
    return {name: host(p) for name, p in module.named_parameters()}


def gcn_reference(conv: GCNConv, x: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    p = params(conv)
    a = adjacency(EDGES, weight) + (np.eye(N) if conv.add_self_loops else 0)
    if conv.normalize:
        degree = a.sum(1)
        scale = np.where(degree > 0, 1 / np.sqrt(np.where(degree > 0, degree, 1)), 0)
        a = scale[:, None] * a * scale[None, :]
    out = a @ x @ p["lin.weight"].T
    return out + p["bias"] if "bias" in p else out


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"bias": False}, {"add_self_loops": False}, {"normalize": False}],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_gcn(backend: str, kwargs: dict, weighted: bool) -> None:
    conv = GCNConv(F_IN, F_OUT, **kwargs)
    with tw.no_grad():
        if conv.bias is not None:
            conv.bias.normal_()
    x = rng.standard_normal((N, F_IN))
    weight = rng.uniform(0.5, 2.0, EDGES.shape[1]) if weighted else None
    edges = tw.tensor(EDGES)
    out = conv(tw.tensor(x), edges, None if weight is None else tw.tensor(weight))
    assert_close(out, gcn_reference(conv, x, weight))
    inputs = [x] if weight is None else [x, weight]
    check_gradients(conv, lambda *t: conv(t[0], edges, *t[1:]), inputs)


def test_duplicate_edges_accumulate(backend: str) -> None:
    conv = GCNConv(F_IN, F_OUT)
    x = tw.randn(N, F_IN)
    twice = conv(x, tw.tensor([[3, 3, 0], [1, 1, 2]]))
    weighted = conv(x, tw.tensor([[3, 0], [1, 2]]), tw.tensor([2.0, 1.0]))
    once = conv(x, tw.tensor([[3, 0], [1, 2]]))
    assert_close(twice, weighted)
    assert not np.allclose(host(twice), host(once))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"root_weight": False}, {"aggr": "sum", "bias": False}, {"normalize": True}],
)
def test_sage(backend: str, kwargs: dict) -> None:
    conv = SAGEConv(F_IN, F_OUT, **kwargs)
    x = rng.standard_normal((N, F_IN))
    edges = tw.tensor(EDGES)
    p = params(conv)
    a = adjacency(EDGES)
    if conv.aggr == "mean":
        a = a / np.maximum(a.sum(1, keepdims=True), 1)
    expected = a @ x @ p["lin_l.weight"].T + p.get("lin_l.bias", 0)
    if conv.root_weight:
        expected = expected + x @ p["lin_r.weight"].T
    if conv.normalize:
        expected = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    assert_close(conv(tw.tensor(x), edges), expected)
    check_gradients(conv, lambda t: conv(t, edges), [x])


def gat_reference(conv: GATConv, x: np.ndarray) -> np.ndarray:
    p = params(conv)
    heads, c = conv.heads, conv.out_channels
    z = (x @ p["lin.weight"].T).reshape(N, heads, c)
    a = adjacency(EDGES) + (np.eye(N) if conv.add_self_loops else 0)
    outs = []
    for h in range(heads):
        src = z[:, h] @ p["att_src"][0, h]
        dst = z[:, h] @ p["att_dst"][0, h]
        e = dst[:, None] + src[None, :]  # e[i, j] for the edge j -> i
        e = np.where(e > 0, e, conv.negative_slope * e)
        top = np.where(a > 0, e, -np.inf).max(1, keepdims=True)  # stable: per-row max
        w = a * np.exp(np.where(a > 0, e - np.where(np.isfinite(top), top, 0), 0))
        total = w.sum(1, keepdims=True)
        outs.append((w / np.where(total > 0, total, 1)) @ z[:, h])
    out = np.concatenate(outs, 1) if conv.concat else np.mean(outs, 0)
    return out + p["bias"] if "bias" in p else out


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"heads": 2},
        {"heads": 2, "concat": False, "negative_slope": 0.1},
        {"add_self_loops": False, "bias": False},
    ],
)
def test_gat(backend: str, kwargs: dict) -> None:
    conv = GATConv(F_IN, F_OUT, **kwargs)
    with tw.no_grad():
        if conv.bias is not None:
            conv.bias.normal_()
    x = rng.standard_normal((N, F_IN)) * 2  # scores on both sides of the LeakyReLU kink
    edges = tw.tensor(EDGES)
    assert_close(conv(tw.tensor(x), edges), gat_reference(conv, x))
    check_gradients(conv, lambda t: conv(t, edges), [x])


@pytest.mark.parametrize("attention", ["att_dst", "att_src"])
def test_gat_large_scores_stay_finite(backend: str, attention: str) -> None:
    # att_dst: a large target term a_dst·z_i moves all scores into node i by the same amount,
    # far beyond exp()'s range (float64 overflows past 709) and far apart between nodes, so
    # neither an unshifted exp nor one global shift works. att_src: a large source term
    # a_src·z_j spreads the scores of one node's incoming edges by more than exp()'s range,
    # so shifting by any score but the group's largest overflows. The per-node max shift
    # handles both.
    conv = GATConv(F_IN, F_OUT, heads=2)
    x = rng.standard_normal((N, F_IN))
    with tw.no_grad():
        getattr(conv, attention).mul_(5000)
    z = conv.lin(tw.tensor(x)).reshape(N, 2, F_OUT)
    terms = host((z * getattr(conv, attention)).sum(-1))
    assert np.abs(terms).max() > 800 and np.ptp(terms, axis=0).min() > 800
    out = conv(tw.tensor(x), tw.tensor(EDGES))
    assert np.isfinite(host(out)).all()
    assert_close(out, gat_reference(conv, x), rtol=1e-7, atol=1e-9)


def test_gat_attention_dropout(backend: str) -> None:
    # p = 1 drops every coefficient in training, leaving the bias; eval mode keeps them.
    conv = GATConv(F_IN, F_OUT, dropout=1.0)
    with tw.no_grad():
        conv.bias.normal_()
    x = rng.standard_normal((N, F_IN))
    out = conv(tw.tensor(x), tw.tensor(EDGES))
    assert_close(out, np.broadcast_to(host(conv.bias), (N, F_OUT)))
    conv.eval()
    assert_close(conv(tw.tensor(x), tw.tensor(EDGES)), gat_reference(conv, x))


@pytest.mark.parametrize("train_eps", [False, True])
def test_gin(backend: str, train_eps: bool) -> None:
    conv = GINConv(Linear(F_IN, F_OUT), eps=0.3, train_eps=train_eps)
    x = rng.standard_normal((N, F_IN))
    edges = tw.tensor(EDGES)
    p = params(conv)
    expected = (1.3 * x + adjacency(EDGES) @ x) @ p["nn.weight"].T + p["nn.bias"]
    assert_close(conv(tw.tensor(x), edges), expected)
    assert ("eps" in p) == train_eps
    check_gradients(conv, lambda t: conv(t, edges), [x])


def test_init(backend: str) -> None:
    gcn = GCNConv(F_IN, F_OUT)
    bound = np.sqrt(6 / (F_IN + F_OUT))
    weight = host(gcn.lin.weight)
    assert np.all(np.abs(weight) <= bound) and weight.std() > bound / 4
    assert not host(gcn.bias).any()
    gat = GATConv(F_IN, F_OUT, heads=2)
    assert tuple(gat.att_src.shape) == (1, 2, F_OUT)
    assert np.all(np.abs(host(gat.att_src)) <= np.sqrt(6 / (2 + F_OUT)))


def test_errors(backend: str) -> None:
    conv = GCNConv(F_IN, F_OUT)
    x = tw.randn(N, F_IN)
    with pytest.raises(ValueError, match=r"GCNConv: expected edge_index of shape \(2, E\)"):
        conv(x, tw.tensor(EDGES.T))
    with pytest.raises(TypeError, match="GCNConv: edge_index must be int64"):
        conv(x, tw.tensor(EDGES.astype(np.float64)))
    with pytest.raises(ValueError, match=r"GCNConv: expected edge_weight of shape \(7,\)"):
        conv(x, tw.tensor(EDGES), tw.ones(3))
    with pytest.raises(ValueError, match=r"SAGEConv: expected node features x of shape \(N, F\)"):
        SAGEConv(F_IN, F_OUT)(tw.randn(2, N, F_IN), tw.tensor(EDGES))
    with pytest.raises(ValueError, match="SAGEConv: aggr must be 'mean' or 'sum'"):
        SAGEConv(F_IN, F_OUT, aggr="max")
