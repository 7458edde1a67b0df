"""ParameterList and ParameterDict against torch.nn's: registration, key names, state dicts,
list and dict operations, and gradients through a model built on them."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import nn

rng = np.random.default_rng(0)


def build(lib, arrays: dict[str, np.ndarray]):
    """The same model in tw or torch: a ParameterList of weights, a ParameterDict of biases
    (filled from a plain dict, so in sorted key order) and a scale appended later."""
    tensor = tw.tensor if lib is nn else torch.tensor

    class Model(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weights = lib.ParameterList([tensor(arrays["w0"]), tensor(arrays["w1"])])
            self.biases = lib.ParameterDict({"second": tensor(arrays["b1"])})
            self.biases.update(OrderedDict(first=lib.Parameter(tensor(arrays["b0"]))))
            self.weights.append(tensor(arrays["scale"]))

        def forward(self, x):
            h = (x @ self.weights[0] + self.biases["first"]).tanh()
            return (h @ self.weights[1] + self.biases["second"]) * self.weights[-1]

    return Model()


def test_model_matches_torch(backend: str) -> None:
    arrays = {
        "w0": rng.standard_normal((3, 4)),
        "w1": rng.standard_normal((4, 2)),
        "b0": rng.standard_normal(4),
        "b1": rng.standard_normal(2),
        "scale": rng.standard_normal(2),
    }
    ours, theirs = build(nn, arrays), build(torch.nn, arrays)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in ours.parameters())
    x = rng.standard_normal((5, 3))
    out, expected = ours(tw.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12, err_msg=name)
    ours.load_state_dict({k: tw.tensor(v.numpy() * 2) for k, v in theirs.state_dict().items()})
    np.testing.assert_allclose(ours.biases["first"].detach().numpy(), arrays["b0"] * 2)


def test_parameter_list_operations() -> None:
    for lib, tensor in ((nn, tw.ones), (torch.nn, torch.ones)):
        plist = lib.ParameterList([tensor(1), tensor(2)])
        plist += [tensor(3)]
        plist.extend([tensor(4)])
        plist.append("not a tensor")
        plist[0] = tensor(5)
        sliced = plist[1:3]
        shapes = [tuple(p.shape) for p in plist if not isinstance(p, str)]
        result = (
            len(plist),
            shapes,
            type(sliced).__name__,
            [tuple(p.shape) for p in sliced],
            plist[-1],
            [n for n, _ in plist.named_parameters()],
            sliced[0] is plist[1],
        )
        if lib is nn:
            ours = result
            with pytest.raises(IndexError, match="out of range"):
                plist[5]
            with pytest.raises(TypeError, match="iterable"):
                plist.extend(tensor(2))
            with pytest.raises(RuntimeError, match="should not be called"):
                plist()
            assert "(0): Parameter containing: [" in repr(plist)
            assert "(4): Object of type: str" in repr(plist)
    assert ours == result


def test_parameter_dict_operations() -> None:
    for lib, tensor in ((nn, tw.ones), (torch.nn, torch.ones)):
        pdict = lib.ParameterDict({"b": tensor(2), "a": tensor(1)})
        pdict["c"] = tensor(3)
        pdict.update([("d", tensor(4)), ("a", tensor(5))])
        popped = pdict.pop("b")
        default = pdict.setdefault("e", tensor(6))
        merged = pdict | lib.ParameterDict({"f": tensor(7)})
        result = (
            list(pdict.keys()),
            [tuple(v.shape) for v in pdict.values()],
            [k for k, _ in pdict.items()],
            tuple(popped.shape),
            isinstance(default, lib.Parameter),
            "a" in pdict,
            pdict.get("zz") is None,
            list(merged),
            [n for n, _ in pdict.named_parameters()],
            list(reversed(pdict)),
            pdict.popitem()[0],
            len(pdict),
        )
        if lib is nn:
            ours = result
            with pytest.raises(TypeError, match="strings"):
                pdict[1] = tensor(1)
            with pytest.raises(ValueError, match="pair"):
                pdict.update([("x",)])
            copy = pdict.copy()
            assert copy["a"] is pdict["a"]
            pdict.clear()
            assert len(pdict) == 0 and list(pdict.parameters()) == []
    assert ours == result
