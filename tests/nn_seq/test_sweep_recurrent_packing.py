"""A seeded sweep of ``tw.nn.utils.rnn`` against ``torch.nn.utils.rnn``, and of packed
batches through ``RNN``/``LSTM``/``GRU``.

Each packing case draws lengths (sorted or not, as a list or a tensor), a padded batch
(``batch_first`` or not, trailing dimensions, float32/float64) and ``enforce_sorted``; it
compares ``pack_padded_sequence``'s fields (or its exception class), ``pad_packed_sequence``
with a drawn ``batch_first``, ``padding_value`` and ``total_length``, ``unpack_sequence``,
and the gradient of a linear loss of the padded result with respect to the input. Each
padding case draws sequences for ``pad_sequence`` (``batch_first``, ``padding_value``,
``padding_side``), ``unpad_sequence`` and ``pack_sequence``. Each packed-layer case runs a
drawn layer on a packed batch with or without ``hx`` and compares the packed output, the
final states and every gradient. Backends: NumPy and PyTorch's CPU (a few cases on cuPyNumeric).

The suite runs a deterministic share of the cases (``TW_SWEEP_SHARE``, default 1 in 6;
``TW_SWEEP_SHARE=1`` runs them all)."""

from __future__ import annotations

import random
from typing import Any, Optional

import numpy as np
import pytest
import tensorweaver as tw
import torch
from test_sweep_recurrent import CLASSES, assert_matches, run_both, shared
from tw_backends import entered

PACK_CASES = 150
PAD_CASES = 60
PACKED_LAYER_CASES = 120


def fields(packed: Any) -> list[Any]:
    return [packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices]


def same_results(ours: Any, theirs: Any, dtype: str, what: str) -> None:
    """Tensors (nested in lists) alike, None where PyTorch has None."""
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)), f"{what}: {type(ours).__name__}"
        assert len(ours) == len(theirs), f"{what}: {len(ours)} items, PyTorch {len(theirs)}"
        for i, (a, e) in enumerate(zip(ours, theirs)):
            same_results(a, e, dtype, f"{what}[{i}]")
    elif theirs is None:
        assert ours is None, f"{what}: {ours!r}, PyTorch None"
    else:
        assert isinstance(ours, tw.Tensor), f"{what}: {type(ours).__name__}"
        assert_matches(ours, theirs, dtype, what)


def draw_lengths(r: random.Random, batch: int, longest: int, sorted_: bool) -> list[int]:
    lengths = [r.randint(1, longest) for _ in range(batch)]
    lengths[r.randrange(batch)] = longest
    return sorted(lengths, reverse=True) if sorted_ else lengths


class PackCase:
    """pack_padded_sequence, pad_packed_sequence and unpack_sequence on one drawn batch."""

    def __init__(self, index: int) -> None:
        r = random.Random(20_000 + index)
        self.seed = 20_000 + index
        self.batch = r.randint(1, 4)
        self.longest = r.randint(1, 4)
        self.time = self.longest + r.choice((0, 0, 1))
        self.lengths = draw_lengths(r, self.batch, self.longest, r.random() < 0.5)
        self.as_tensor = r.random() < 0.5
        self.enforce_sorted = r.random() < 0.5
        self.batch_first = r.random() < 0.5
        self.trailing = r.choice(((), (2,), (3,), (2, 2)))
        self.dtype = r.choice(("float32", "float64"))
        self.out_batch_first = r.random() < 0.5
        self.padding_value = r.choice((0.0, -1.5))
        self.total_length = r.choice((None, self.time, self.time + 2))
        self.backend = r.choice(("numpy", "torch:cpu"))
        self.id = (
            f"{index}-lengths{self.lengths}{'T' if self.as_tensor else 'L'}-time{self.time}-"
            f"sorted={self.enforce_sorted}-bf={self.batch_first}-{self.trailing}-{self.dtype}-"
            f"out_bf={self.out_batch_first}-pad={self.padding_value}-total={self.total_length}-"
            f"{self.backend}"
        )

    def run(self, m: Any, x: np.ndarray) -> tuple[Any, ...]:
        rnn = m.nn.utils.rnn
        leaf = m.tensor(x, requires_grad=True)
        lengths = m.tensor(self.lengths) if self.as_tensor else list(self.lengths)
        try:
            packed = rnn.pack_padded_sequence(
                leaf, lengths, batch_first=self.batch_first, enforce_sorted=self.enforce_sorted
            )
        except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
            return e, leaf
        padded, sizes = rnn.pad_packed_sequence(
            packed, self.out_batch_first, self.padding_value, self.total_length
        )
        rng = np.random.default_rng(self.seed)
        (
            padded * m.tensor(rng.standard_normal(tuple(padded.shape)).astype(self.dtype))
        ).sum().backward()
        return (fields(packed), padded, sizes, rnn.unpack_sequence(packed)), leaf

    def check(self, backend: Optional[str] = None) -> None:
        layout = (self.batch, self.time) if self.batch_first else (self.time, self.batch)
        x = np.random.default_rng(self.seed).standard_normal((*layout, *self.trailing))
        x = x.astype(self.dtype)
        with entered(backend or self.backend, seed=self.seed):
            theirs, t_leaf = self.run(torch, x)
            ours, o_leaf = self.run(tw, x)
        if isinstance(theirs, Exception):
            assert isinstance(ours, type(theirs)), f"{self.id}: {ours!r}, PyTorch {theirs!r}"
            return
        assert not isinstance(ours, Exception), f"{self.id}: raised {ours!r}"
        same_results(ours, theirs, self.dtype, self.id)
        assert_matches(o_leaf.grad, t_leaf.grad, self.dtype, f"{self.id}: input gradient")


class PadCase:
    """pad_sequence and unpad_sequence on drawn sequences."""

    def __init__(self, index: int) -> None:
        r = random.Random(30_000 + index)
        self.seed = 30_000 + index
        self.lengths = [r.randint(0, 4) for _ in range(r.randint(1, 4))]
        self.trailing = r.choice(((), (2,), (1, 3)))
        self.batch_first = r.random() < 0.5
        self.padding_value = r.choice((0.0, 2.5))
        self.padding_side = r.choice(("right", "left"))
        self.dtype = r.choice(("float32", "float64"))
        self.backend = r.choice(("numpy", "torch:cpu"))
        self.id = (
            f"{index}-lengths{self.lengths}-{self.trailing}-bf={self.batch_first}-"
            f"pad={self.padding_value}-{self.padding_side}-{self.dtype}-{self.backend}"
        )

    def check(self, backend: Optional[str] = None) -> None:
        rng = np.random.default_rng(self.seed)
        arrays = [rng.standard_normal((n, *self.trailing)).astype(self.dtype) for n in self.lengths]
        results = {}
        with entered(backend or self.backend, seed=self.seed):
            for m in (torch, tw):
                rnn = m.nn.utils.rnn
                leaves = [m.tensor(a, requires_grad=True) for a in arrays]
                padded = rnn.pad_sequence(
                    leaves, self.batch_first, self.padding_value, self.padding_side
                )
                cotangent = np.random.default_rng(1).standard_normal(tuple(padded.shape))
                (padded * m.tensor(cotangent.astype(self.dtype))).sum().backward()
                unpadded = packed = None
                if self.padding_side == "right":
                    lengths = m.tensor(self.lengths)
                    unpadded = rnn.unpad_sequence(padded.detach(), lengths, self.batch_first)
                if min(self.lengths) > 0:
                    packed = fields(rnn.pack_sequence(leaves, enforce_sorted=False))
                results[m] = (padded, unpadded, packed, [leaf.grad for leaf in leaves])
        same_results(results[tw], results[torch], self.dtype, self.id)


class PackedLayerCase:
    """A drawn layer on a packed batch."""

    def __init__(self, index: int) -> None:
        r = random.Random(40_000 + index)
        self.seed = 40_000 + index
        self.mode = r.choice(tuple(CLASSES))
        self.hidden = r.randint(1, 4)
        self.input_size = r.randint(1, 3)
        self.kwargs: dict[str, Any] = {
            "num_layers": r.choice((1, 1, 2)),
            "bias": r.random() < 0.8,
            "bidirectional": r.random() < 0.5,
            "batch_first": r.random() < 0.3,  # no effect on packed input, as PyTorch
        }
        if self.mode.startswith("RNN"):
            self.kwargs["nonlinearity"] = self.mode[4:].lower()
        if self.mode == "LSTM" and self.hidden > 1 and r.random() < 0.4:
            self.kwargs["proj_size"] = r.randint(1, self.hidden - 1)
        if self.kwargs["num_layers"] > 1 and r.random() < 0.3:
            self.kwargs["dropout"] = 0.5  # eval mode: no effect, as PyTorch
        self.batch = r.randint(1, 4)
        self.longest = r.randint(1, 4)
        self.enforce_sorted = r.random() < 0.5
        self.lengths = draw_lengths(r, self.batch, self.longest, self.enforce_sorted)
        self.with_state = r.random() < 0.5
        self.dtype = r.choice(("float32", "float64"))
        self.backend = r.choice(("numpy", "torch:cpu"))
        given = ",".join(f"{k}={v}" for k, v in self.kwargs.items() if k != "nonlinearity")
        self.id = (
            f"{index}-{self.mode}-I{self.input_size}H{self.hidden}-{given}-"
            f"lengths{self.lengths}-sorted={self.enforce_sorted}-"
            f"{'hx' if self.with_state else 'nohx'}-{self.dtype}-{self.backend}"
        )

    def check(self, backend: Optional[str] = None) -> None:
        rng = np.random.default_rng(self.seed)
        arrays = [rng.standard_normal((self.longest, self.batch, self.input_size))]
        if self.with_state:
            count = self.kwargs["num_layers"] * (2 if self.kwargs["bidirectional"] else 1)
            width = self.kwargs.get("proj_size") or self.hidden
            arrays.append(rng.standard_normal((count, self.batch, width)))
            if self.mode == "LSTM":
                arrays.append(rng.standard_normal((count, self.batch, self.hidden)))

        def make(m: Any) -> Any:
            if m is torch:
                torch.manual_seed(self.seed)
            layer = getattr(m.nn, CLASSES[self.mode])
            module = layer(
                self.input_size, self.hidden, **self.kwargs, dtype=getattr(m, self.dtype)
            )
            return module.eval() if "dropout" in self.kwargs else module

        def call(module: Any, x: Any, *state: Any) -> Any:
            m = torch if isinstance(x, torch.Tensor) else tw
            packed = m.nn.utils.rnn.pack_padded_sequence(
                x, self.lengths, enforce_sorted=self.enforce_sorted
            )
            out, last = module(packed, (state if len(state) == 2 else state[0]) if state else None)
            indices = [i for i in (out.sorted_indices, out.unsorted_indices) if i is not None]
            assert out.batch_sizes.tolist() == packed.batch_sizes.tolist()
            assert [i.tolist() for i in indices] == [
                i.tolist()
                for i in (packed.sorted_indices, packed.unsorted_indices)
                if i is not None
            ]
            return out.data, last

        with entered(backend or self.backend, seed=self.seed):
            run_both(
                make, [a.astype(self.dtype) for a in arrays], call, self.dtype, self.seed, self.id
            )


PACKS = shared([PackCase(i) for i in range(PACK_CASES)])
PADS = shared([PadCase(i) for i in range(PAD_CASES)])
PACKED_LAYERS = shared([PackedLayerCase(i) for i in range(PACKED_LAYER_CASES)])


@pytest.mark.parametrize("case", PACKS, ids=[c.id for c in PACKS])
def test_pack_sweep(case: PackCase) -> None:
    case.check()


@pytest.mark.parametrize("case", PADS, ids=[c.id for c in PADS])
def test_pad_sweep(case: PadCase) -> None:
    case.check()


@pytest.mark.parametrize("case", PACKED_LAYERS, ids=[c.id for c in PACKED_LAYERS])
def test_packed_layer_sweep(case: PackedLayerCase) -> None:
    case.check()


@pytest.mark.parametrize("case", PACKS[:1] + PADS[:1] + PACKED_LAYERS[:1], ids=lambda c: c.id)
def test_sweep_share_on_cunumeric(case: Any) -> None:
    """A few cases on cuPyNumeric (skipped where its device is unusable)."""
    case.check("cunumeric")
