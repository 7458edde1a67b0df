"""tw.save(module) / tw.load: whole modules come back with their class, attributes, flags,
parameters, buffers and children, give the same outputs, and keep training; user classes
load only when allowed (PyTorch's word_language_model flow, without pickle).

References: the original module's own outputs and state (bit-exact), and PyTorch for the
exception type of a refused class."""

from __future__ import annotations

import io
import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tensorweaver as tw
import tensorweaver.nn as nn
import torch
from safetensors_files import header_of
from tensorweaver import serialization as ser


class RNNModel(nn.Module):
    """pytorch/examples word_language_model's model: layers plus plain attributes."""

    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, tie: bool = False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.2 if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie:
            self.decoder.weight = self.encoder.weight
        self.rnn_type = "LSTM"
        self.nhid = nhid
        self.nlayers = nlayers
        self.sizes = {"in": (ninp,), "hidden": [nhid, nlayers]}

    def forward(self, tokens: Any) -> Any:
        out, _ = self.rnn(self.drop(self.encoder(tokens)))
        return self.decoder(self.drop(out))


WORD_LM_GLOBALS = [RNNModel, nn.LSTM, nn.Dropout, nn.Linear, nn.Embedding]


@pytest.fixture(autouse=True)
def no_allowed_globals() -> Iterator[None]:
    before = ser.get_safe_globals()
    ser.clear_safe_globals()
    yield
    ser.clear_safe_globals()
    ser.add_safe_globals(before)


def round_trip(obj: Any, **load: Any) -> Any:
    buffer = io.BytesIO()
    ser.save(obj, buffer)
    buffer.seek(0)
    return ser.load(buffer, **load)


def bits(t: Any) -> bytes:
    return t.detach().numpy().tobytes()


def check_same_module(a: nn.Module, b: nn.Module) -> None:
    """Same classes, flags, attributes and state; ``b`` shares no tensor with ``a``."""
    pairs = list(zip(a.named_modules(), b.named_modules()))
    assert len(pairs) == len(list(a.named_modules())) == len(list(b.named_modules()))
    for (name_a, ma), (name_b, mb) in pairs:
        assert name_a == name_b and type(ma) is type(mb) and ma.training == mb.training
        assert ma._non_persistent_buffers_set == mb._non_persistent_buffers_set
        plain = {k: v for k, v in vars(ma).items() if not k.startswith("_") and k != "training"}
        assert plain.keys() == {k for k in vars(mb) if not k.startswith("_") and k != "training"}
        for key, value in plain.items():
            refers = isinstance(value, list) and any(isinstance(v, nn.Module) for v in value)
            if not (isinstance(value, tw.Tensor) or refers):  # references: checked by identity
                assert vars(mb)[key] == value and type(vars(mb)[key]) is type(value), key
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for key in sa:
        assert (sa[key].dtype, sa[key].shape) == (sb[key].dtype, sb[key].shape), key
        assert bits(sa[key]) == bits(sb[key]), key
    params_a, params_b = dict(a.named_parameters()), dict(b.named_parameters())
    assert list(params_a) == list(params_b)
    for key, p in params_b.items():
        assert isinstance(p, nn.Parameter) and p.requires_grad == params_a[key].requires_grad
        assert p is not params_a[key]


def test_mlp(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 3)).double()
    model[0].weight.requires_grad_(False)  # a frozen layer stays frozen
    model.eval()
    ser.save(model, tmp_path / "mlp")
    loaded = ser.load(tmp_path / "mlp")
    check_same_module(model, loaded)
    assert not loaded[0].weight.requires_grad and loaded[0].bias.requires_grad
    x = tw.randn(7, 5, dtype=tw.float64)
    assert bits(loaded(x)) == bits(model(x))


def test_cnn_with_batchnorm_buffers_and_train_flags() -> None:
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 5, bias=False),
    ).double()
    for _ in range(3):  # running statistics and num_batches_tracked move
        model(tw.randn(6, 2, 6, 6, dtype=tw.float64))
    model[1].eval()  # mixed flags survive
    loaded = round_trip(model)
    check_same_module(model, loaded)
    assert loaded[1].num_batches_tracked.item() == 3 and loaded[5].bias is None
    assert [m.training for m in loaded] == [True, False, True, True, True, True]
    model.eval()
    loaded.eval()
    x = tw.randn(3, 2, 6, 6, dtype=tw.float64)
    assert bits(loaded(x)) == bits(model(x))


def test_lstm() -> None:
    model = nn.LSTM(3, 5, num_layers=2, batch_first=True).double()
    loaded = round_trip(model)
    check_same_module(model, loaded)
    x = tw.randn(2, 4, 3, dtype=tw.float64)
    (out, (h, c)), (out2, (h2, c2)) = model(x), loaded(x)
    assert bits(out) == bits(out2) and bits(h) == bits(h2) and bits(c) == bits(c2)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_and_its_activation_function(activation: str) -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation)
    model = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8)).double().eval()
    loaded = round_trip(model)
    check_same_module(model, loaded)
    assert loaded.layers[1].activation is model.layers[1].activation
    x = tw.randn(5, 3, 8, dtype=tw.float64)
    assert bits(loaded(x)) == bits(model(x))


def test_word_language_model_flow(tmp_path: Path) -> None:
    tw.manual_seed(0)
    model = RNNModel(ntoken=30, ninp=8, nhid=8, nlayers=2, tie=True).double()
    path = tmp_path / "model.pt"
    with open(path, "wb") as f:
        ser.save(model, f)
    with open(path, "rb") as f:
        with pytest.raises(pickle.UnpicklingError) as info:
            ser.load(f)
    message = str(info.value)
    assert f"'{__name__}:RNNModel'" in message
    assert "tw.serialization.add_safe_globals([RNNModel])" in message
    assert "tw.serialization.safe_globals([RNNModel])" in message
    with ser.safe_globals(WORD_LM_GLOBALS), open(path, "rb") as f:
        loaded = ser.load(f)
    assert type(loaded) is RNNModel and ser.get_safe_globals() == []
    check_same_module(model, loaded)
    assert (loaded.rnn_type, loaded.nhid, loaded.nlayers) == ("LSTM", 8, 2)
    assert loaded.sizes == {"in": (8,), "hidden": [8, 2]}
    assert loaded.decoder.weight is loaded.encoder.weight, "weight tying survives"
    assert len(list(loaded.parameters())) == len(list(model.parameters()))

    # Both keep training in lockstep: same dropout masks, same updates.
    tokens = tw.randint(0, 30, (6, 4))
    targets = tw.randint(0, 30, (6, 4))
    start = bits(model.decoder.weight)
    for net in (model, loaded):
        tw.manual_seed(1)
        opt = tw.optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            logits = net(tokens)
            loss = tw.nn.functional.cross_entropy(logits.reshape(-1, 30), targets.reshape(-1))
            loss.backward()
            opt.step()
    assert bits(model.decoder.weight) != start
    check_same_module(model, loaded)
    assert loaded.decoder.weight is loaded.encoder.weight


def test_modules_inside_containers_and_shared_modules() -> None:
    model = RNNModel(ntoken=10, ninp=4, nhid=4, nlayers=1)
    model.extra_view = [model.decoder]  # a plain attribute referring to a submodule
    opt = tw.optim.Adam(model.parameters())
    checkpoint = {"model": model, "head": model.decoder, "optimizer": opt.state_dict(), "epoch": 2}
    with ser.safe_globals([RNNModel]):
        loaded = round_trip(checkpoint)
    assert list(loaded) == ["model", "head", "optimizer", "epoch"] and loaded["epoch"] == 2
    assert loaded["head"] is loaded["model"].decoder
    assert loaded["model"].extra_view[0] is loaded["model"].decoder
    check_same_module(model, loaded["model"])
    fresh = tw.optim.Adam(loaded["model"].parameters())
    fresh.load_state_dict(loaded["optimizer"])


def test_cycles_through_plain_attributes() -> None:
    outer = nn.Sequential(nn.Linear(2, 2))
    outer[0].owner = [outer]  # a cycle the module tree alone would not have
    loaded = round_trip(outer)
    assert loaded[0].owner[0] is loaded


def test_what_is_and_is_not_saved() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    model[0].register_buffer("scratch", tw.ones(3), persistent=False)
    model[0].compute_dtype = tw.float64
    model[0].table = {1: "a", "k": (None, 2.5, True)}
    calls = []
    model.register_forward_hook(lambda module, args, out: calls.append(1))
    loaded = round_trip(model)
    check_same_module(model, loaded)
    assert "scratch" not in loaded.state_dict() and bits(loaded[0].scratch) == bits(tw.ones(3))
    assert loaded[0].compute_dtype is tw.float64
    assert loaded[0].table == {1: "a", "k": (None, 2.5, True)}
    loaded(tw.ones(1, 2))
    assert calls == [], "hooks are not saved"
    model(tw.ones(1, 2))
    assert calls == [1]


def test_attributes_that_cannot_be_described_name_their_path() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2)))
    model[1][0].fn = lambda x: x
    sink = io.BytesIO()
    with pytest.raises(TypeError, match=r"cannot store a function at '1\.0\.fn' \(<function"):
        ser.save(model, sink)
    del model[1][0].fn
    model[0].thing = object()
    with pytest.raises(TypeError, match=r"cannot store a object at 'model\.0\.thing'"):
        ser.save({"model": model}, sink)
    del model[0].thing

    class Local(nn.Module):
        pass

    model[0].local = Local()
    with pytest.raises(TypeError, match=r"module at '0\.local'.*defined inside a function"):
        ser.save(model, sink)
    assert sink.getvalue() == b""


def test_state_dict_files_are_unchanged(tmp_path: Path) -> None:
    model = RNNModel(ntoken=10, ninp=4, nhid=4, nlayers=1)
    ser.save(model.state_dict(), tmp_path / "sd")
    _, header = header_of(tmp_path / "sd")
    entry = json.loads(header.pop("__metadata__")["tensorweaver"])
    assert entry["format"] == "tensorweaver/2", "readable by TensorWeaver 0.4"
    assert sorted(header) == sorted(model.state_dict())
    fresh = RNNModel(ntoken=10, ninp=4, nhid=4, nlayers=1)
    fresh.load_state_dict(ser.load(tmp_path / "sd"))
    check_same_module(model, fresh)
    ser.save(model, tmp_path / "whole")
    _, header = header_of(tmp_path / "whole")
    assert json.loads(header.pop("__metadata__")["tensorweaver"])["format"] == "tensorweaver/3"
    assert sorted(header) == sorted(model.state_dict()), "tensors keep their state_dict names"


def test_map_location_places_every_tensor() -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    loaded = round_trip(model, map_location="torch:cpu")
    assert {t.device.backend for t in [*loaded.parameters(), *loaded.buffers()]} == {"torch"}
    check_same_module(model, loaded)


def test_refusal_has_pytorchs_exception_type() -> None:
    buffer = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2), buffer)
    buffer.seek(0)
    with pytest.raises(Exception) as theirs:
        torch.load(buffer)
    with pytest.raises(Exception) as ours:
        round_trip(RNNModel(5, 2, 2, 1))
    assert type(ours.value) is type(theirs.value) is pickle.UnpicklingError
    assert "add_safe_globals" in str(theirs.value) and "add_safe_globals" in str(ours.value)
