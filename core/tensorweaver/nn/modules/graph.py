"""Graph neural network layers on an edge list: ``GCNConv``, ``SAGEConv``, ``GATConv``,
``GINConv``. PyTorch has no equivalent; names and arguments follow PyTorch Geometric.

Every layer takes node features ``x`` ``(N, F)`` and ``edge_index`` ``(2, E)`` (int64 or
int32), whose column ``(j, i)`` is an edge from source node ``j`` to target node ``i``: node
``i`` aggregates messages from its in-neighbours. Indices must lie in ``[0, N)``. Duplicate
edges are separate messages, so they accumulate (a dense adjacency ``A[i, j]`` counts the
edges ``j -> i``). Gathering is ``index_select`` and aggregation ``index_add`` /
``scatter_add``, so every layer runs and differentiates on every backend.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn import init
from tensorweaver.nn.modules.linear import Linear
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor


def _endpoints(x: Tensor, edge_index: Tensor, fn: str) -> tuple[Tensor, Tensor]:
    """``(source, target)`` index vectors of ``edge_index``; raises if the shapes do not fit."""
    if x.dim() != 2:
        raise ValueError(f"{fn}: expected node features x of shape (N, F), got {tuple(x.shape)}")
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(
            f"{fn}: expected edge_index of shape (2, E), got {tuple(edge_index.shape)}; "
            "stack the (source, target) index vectors as rows"
        )
    if edge_index.dtype not in (tw.int64, tw.int32):
        raise TypeError(
            f"{fn}: edge_index must be int64 (or int32), got {edge_index.dtype}; convert it "
            "with .long()"
        )
    return edge_index[0], edge_index[1]


def _with_self_loops(source: Tensor, target: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """The edge list with one edge ``i -> i`` appended for every node."""
    loops = tw.arange(n, dtype=source.dtype, device=source.device)
    return tw.cat([source, loops]), tw.cat([target, loops])


def _aggregate(messages: Tensor, target: Tensor, n: int) -> Tensor:
    """Per node, the sum of the messages ``(E, ...)`` of the edges that point at it."""
    zeros = tw.zeros(n, *messages.shape[1:], dtype=messages.dtype, device=messages.device)
    return zeros.index_add(0, target, messages)


def _segment_softmax(scores: Tensor, target: Tensor, n: int) -> Tensor:
    """Softmax of ``scores`` ``(E, H)`` over the edges sharing a target node, per column.

    Each group is shifted by its largest score, so no term overflows and the largest is
    ``exp(0)`` (the sum never underflows to 0); the shift cancels in the ratio and carries
    no gradient."""
    index = target.unsqueeze(-1).expand(*scores.shape)
    zeros = tw.zeros(n, *scores.shape[1:], dtype=scores.dtype, device=scores.device)
    shift = zeros.scatter_reduce(0, index, scores.detach(), "amax", include_self=False)
    e = (scores - shift.gather(0, index)).exp()
    return e / zeros.scatter_add(0, index, e).gather(0, index)


def _glorot_(tensor: Tensor) -> Tensor:
    """U(-b, b) with ``b = sqrt(6 / (rows + cols))`` over the last two dimensions."""
    bound = math.sqrt(6.0 / (tensor.shape[-2] + tensor.shape[-1]))
    return init.uniform_(tensor, -bound, bound)


class GCNConv(Module):
    """Graph convolution (Kipf & Welling): ``X' = D^-1/2 Â D^-1/2 X W^T + b``.

    ``Â = A + I`` (with ``add_self_loops``; ``A`` alone without), where ``A[i, j]`` is the
    summed weight of the edges ``j -> i`` (``edge_weight``, 1 each by default; self loops
    weigh 1) and ``D = diag(Σ_j Â[i, j])``. Per edge the message is
    ``deg(i)^-1/2 · w_ji · deg(j)^-1/2 · W x_j``; a node of degree 0 gets no messages.
    ``normalize=False`` drops the ``D^-1/2`` factors: ``X' = Â X W^T + b``. The weight
    ``lin.weight`` ``(out, in)`` starts Glorot-uniform, ``bias`` at zero.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        add_self_loops: bool = True,
        normalize: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.add_self_loops = add_self_loops
        self.normalize = normalize
        self.lin = Linear(in_channels, out_channels, bias=False, device=device, dtype=dtype)
        if bias:
            self.bias = Parameter(tw.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _glorot_(self.lin.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_weight: Optional[Tensor] = None
    ) -> Tensor:
        n = x.shape[0]
        source, target = _endpoints(x, edge_index, "GCNConv")
        if edge_weight is None:
            weight = tw.ones(source.shape[0], dtype=x.dtype, device=x.device)
        elif tuple(edge_weight.shape) != (source.shape[0],):
            raise ValueError(
                f"GCNConv: expected edge_weight of shape ({source.shape[0]},), one weight per "
                f"edge, got {tuple(edge_weight.shape)}"
            )
        else:
            weight = edge_weight
        if self.add_self_loops:
            source, target = _with_self_loops(source, target, n)
            weight = tw.cat([weight, tw.ones(n, dtype=weight.dtype, device=weight.device)])
        if self.normalize:
            degree = _aggregate(weight, target, n)
            isolated = degree == 0
            scale = degree.masked_fill(isolated, 1).rsqrt().masked_fill(isolated, 0)
            weight = scale.index_select(0, source) * weight * scale.index_select(0, target)
        h = self.lin(x)
        out = _aggregate(h.index_select(0, source) * weight.unsqueeze(-1), target, n)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}"


class SAGEConv(Module):
    """GraphSAGE: ``x'_i = W_l · mean_{j -> i} x_j + b + W_r · x_i``.

    The mean runs over the edges into ``i`` (a duplicate edge counts twice; a node without
    in-edges aggregates 0); ``aggr="sum"`` sums instead. ``root_weight=False`` drops the
    ``W_r`` term; ``normalize=True`` scales each output row to unit L2 norm. ``lin_l``
    (with the bias) and ``lin_r`` (without) start as Linear does.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        aggr: str = "mean",
        normalize: bool = False,
        root_weight: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if aggr not in ("mean", "sum"):
            raise ValueError(f"SAGEConv: aggr must be 'mean' or 'sum', got {aggr!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.aggr = aggr
        self.normalize = normalize
        self.root_weight = root_weight
        factory = {"device": device, "dtype": dtype}
        self.lin_l = Linear(in_channels, out_channels, bias=bias, **factory)
        self.lin_r = (
            Linear(in_channels, out_channels, bias=False, **factory) if root_weight else None
        )

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        n = x.shape[0]
        source, target = _endpoints(x, edge_index, "SAGEConv")
        neighbours = _aggregate(x.index_select(0, source), target, n)
        if self.aggr == "mean":
            ones = tw.ones(source.shape[0], dtype=x.dtype, device=x.device)
            count = _aggregate(ones, target, n).clamp(min=1)
            neighbours = neighbours / count.unsqueeze(-1)
        out = self.lin_l(neighbours)
        if self.lin_r is not None:
            out = out + self.lin_r(x)
        return F.normalize(out, p=2.0, dim=-1) if self.normalize else out

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, aggr={self.aggr!r}"


class GATConv(Module):
    """Graph attention (Veličković et al.) with ``heads`` heads of ``out_channels`` each.

    Per head ``h``: ``z = W_h x``, edge score ``e_ji = LeakyReLU(a_src·z_j + a_dst·z_i)``
    (slope ``negative_slope``, 0.2), ``α_ji = exp(e_ji) / Σ_{k -> i} exp(e_ki)`` (softmax
    over the edges into ``i``, each duplicate edge a separate term), then
    ``x'_i = Σ_{j -> i} α_ji z_j``. Heads are concatenated ``(N, heads * out)`` with
    ``concat``, else averaged ``(N, out)``; ``bias`` is added last. ``add_self_loops``
    appends one edge ``i -> i`` per node (existing edges are kept); a node without in-edges
    outputs the bias. ``dropout`` drops attention coefficients while training. ``lin.weight``
    ``(heads * out, in)``, ``att_src`` and ``att_dst`` ``(1, heads, out)`` start
    Glorot-uniform, ``bias`` at zero.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        heads: int = 1,
        concat: bool = True,
        negative_slope: float = 0.2,
        dropout: float = 0.0,
        add_self_loops: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.heads = heads
        self.concat = concat
        self.negative_slope = negative_slope
        self.dropout = dropout
        self.add_self_loops = add_self_loops
        factory = {"device": device, "dtype": dtype}
        self.lin = Linear(in_channels, heads * out_channels, bias=False, **factory)
        self.att_src = Parameter(tw.empty(1, heads, out_channels, **factory))
        self.att_dst = Parameter(tw.empty(1, heads, out_channels, **factory))
        if bias:
            size = heads * out_channels if concat else out_channels
            self.bias = Parameter(tw.empty(size, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for weight in (self.lin.weight, self.att_src, self.att_dst):
            _glorot_(weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        n = x.shape[0]
        source, target = _endpoints(x, edge_index, "GATConv")
        if self.add_self_loops:
            source, target = _with_self_loops(source, target, n)
        z = self.lin(x).reshape(n, self.heads, self.out_channels)
        score_src = (z * self.att_src).sum(-1)  # (N, heads)
        score_dst = (z * self.att_dst).sum(-1)
        scores = F.leaky_relu(
            score_src.index_select(0, source) + score_dst.index_select(0, target),
            self.negative_slope,
        )
        alpha = F.dropout(_segment_softmax(scores, target, n), self.dropout, self.training)
        out = _aggregate(z.index_select(0, source) * alpha.unsqueeze(-1), target, n)
        out = out.reshape(n, -1) if self.concat else out.mean(1)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, heads={self.heads}"


class GINConv(Module):
    """Graph isomorphism network layer: ``x'_i = nn((1 + eps) · x_i + Σ_{j -> i} x_j)``.

    ``nn`` is any module mapping ``(N, F)`` to ``(N, F')`` (an MLP in the paper). ``eps``
    is a learnable Parameter ``(1,)`` with ``train_eps``, else a fixed buffer.
    """

    def __init__(self, nn: Module, eps: float = 0.0, train_eps: bool = False) -> None:
        super().__init__()
        self.nn = nn
        self.initial_eps = eps
        value = tw.tensor([float(eps)])
        if train_eps:
            self.eps = Parameter(value)
        else:
            self.register_buffer("eps", value)

    def reset_parameters(self) -> None:
        with tw.no_grad():
            self.eps.fill_(self.initial_eps)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        source, target = _endpoints(x, edge_index, "GINConv")
        neighbours = _aggregate(x.index_select(0, source), target, x.shape[0])
        return self.nn((1 + self.eps) * x + neighbours)
