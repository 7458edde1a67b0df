"""The U-Net and the CTC speech model of the zoo: against PyTorch twins with the same weights
in float64 (outputs, losses, gradients, first training steps), and learning small tasks."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.models import CTCSpeechModel, UNet, greedy_decode
from torch_twins import assert_close

torch = pytest.importorskip("torch")
tnn, tF = torch.nn, torch.nn.functional


def _twin_double_conv(cin: int, cout: int, slope: float) -> torch.nn.Sequential:
    layers = []
    for c in (cin, cout):
        layers += [
            tnn.Conv2d(c, cout, 3, padding=1, bias=False),
            tnn.InstanceNorm2d(cout, affine=True),
            tnn.LeakyReLU(slope) if slope else tnn.ReLU(),
        ]
    return tnn.Sequential(*layers)


class _TwinUp(tnn.Module):
    def __init__(self, c: int, upsample: str, slope: float) -> None:
        super().__init__()
        self.bilinear = upsample == "bilinear"
        half = c // 2
        self.up = tnn.Conv2d(c, half, 1) if self.bilinear else tnn.ConvTranspose2d(c, half, 2, 2)
        self.conv = _twin_double_conv(c, half, slope)

    def forward(self, x, skip):
        if self.bilinear:
            x = self.up(tF.interpolate(x, size=skip.shape[-2:], mode="bilinear"))
        else:
            x = self.up(x)
            dh, dw = skip.shape[-2] - x.shape[-2], skip.shape[-1] - x.shape[-1]
            x = tF.pad(x, [dw // 2, dw - dw // 2, dh // 2, dh - dh // 2])
        return self.conv(torch.cat([skip, x], 1))


class _TwinUNet(tnn.Module):
    """UNet written out in PyTorch, with the same parameter names."""

    def __init__(self, cin: int, cout: int, base: int, depth: int, upsample: str, slope: float):
        super().__init__()
        widths = [base * 2**i for i in range(depth + 1)]
        ins = [cin, *widths[:-2]]
        self.down = tnn.ModuleList(_twin_double_conv(a, b, slope) for a, b in zip(ins, widths))
        self.pool = tnn.MaxPool2d(2)
        self.bottleneck = _twin_double_conv(widths[-2], widths[-1], slope)
        self.up = tnn.ModuleList(_TwinUp(w, upsample, slope) for w in reversed(widths[1:]))
        self.head = tnn.Conv2d(base, cout, 1)

    def forward(self, x):
        skips = []
        for stage in self.down:
            skips.append(stage(x))
            x = self.pool(skips[-1])
        x = self.bottleneck(x)
        for block, skip in zip(self.up, reversed(skips)):
            x = block(x, skip)
        return self.head(x)


class _TwinSpeech(tnn.Module):
    def __init__(self, features: int, classes: int, hidden: int, rnn: str) -> None:
        super().__init__()
        self.frontend = tnn.Conv1d(features, hidden, 3, stride=2, padding=1)
        self.rnn = {"gru": tnn.GRU, "lstm": tnn.LSTM}[rnn](hidden, hidden, bidirectional=True)
        self.classifier = tnn.Linear(2 * hidden, classes)

    def forward(self, x, lengths):
        x = tF.relu(self.frontend(x.transpose(1, 2)))
        out_lengths = (lengths - 1) // 2 + 1
        packed = tnn.utils.rnn.pack_padded_sequence(
            x.permute(2, 0, 1), out_lengths, enforce_sorted=False
        )
        h, _ = tnn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], total_length=x.shape[-1])
        return tF.log_softmax(self.classifier(h), -1), out_lengths


def _twin_of(model: tw.nn.Module, twin: torch.nn.Module) -> torch.nn.Module:
    """``twin`` in float64 with ``model``'s state dict (the same names)."""
    state = {k: torch.from_numpy(np.asarray(v)) for k, v in model.state_dict().items()}
    twin.double().load_state_dict(state)
    return twin


def _assert_grads_match(model: tw.nn.Module, twin: torch.nn.Module) -> None:
    theirs = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert_close(p.grad, theirs[name].grad)


def _shapes(n: int, height: int, width: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Noisy images with one or two bright squares, and their masks (1 inside a square)."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((n, height, width), dtype=np.int64)
    for mask in masks:
        for _ in range(rng.integers(1, 3)):
            side = rng.integers(3, 7)
            r, c = rng.integers(0, height - side), rng.integers(0, width - side)
            mask[r : r + side, c : c + side] = 1
    images = masks[:, None] + 0.3 * rng.standard_normal((n, 1, height, width))
    return images, masks


@pytest.mark.parametrize(
    ("upsample", "slope"), [("transpose", 0.0), ("bilinear", 0.1)], ids=["transpose", "bilinear"]
)
def test_unet_matches_its_pytorch_twin(backend: str, upsample: str, slope: float) -> None:
    model = UNet(1, 3, base_channels=2, depth=2, upsample=upsample, negative_slope=slope).double()
    twin = _twin_of(model, _TwinUNet(1, 3, 2, 2, upsample, slope))
    rng = np.random.default_rng(0)
    x, target = rng.standard_normal((2, 1, 13, 11)), rng.integers(0, 3, (2, 13, 11))
    mine_x, their_x = tw.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = model(mine_x), twin(their_x)
    assert tuple(out.shape) == (2, 3, 13, 11)
    assert_close(out, expected)
    loss = tw.nn.functional.cross_entropy(out, tw.tensor(target))
    their_loss = tF.cross_entropy(expected, torch.from_numpy(target))
    assert_close(loss, their_loss)
    loss.backward()
    their_loss.backward()
    assert_close(mine_x.grad, their_x.grad)
    _assert_grads_match(model, twin)


def test_unet_checks_its_input_and_options() -> None:
    with pytest.raises(ValueError, match="UpBlock: upsample must be one of transpose, bilinear"):
        UNet(1, 2, upsample="nearest")
    with pytest.raises(ValueError, match=r"UNet: expected images of shape \(N, C, H, W\)"):
        UNet(1, 2, 2, 1)(tw.zeros(5, 5))
    with pytest.raises(ValueError, match="UNet: images of 7x3 are too small for depth 2"):
        UNet(1, 2, 2, 2)(tw.zeros(1, 1, 7, 3))  # a 1x0 bottleneck


def test_unet_training_follows_its_pytorch_twin(backend: str) -> None:
    images, masks = _shapes(4, 19, 21, seed=0)  # odd sizes: the decoder pads by one
    model = UNet(1, 2, base_channels=2, depth=2).double()
    twin = _twin_of(model, _TwinUNet(1, 2, 2, 2, "transpose", 0.0))
    optim = tw.optim.Adam(model.parameters(), lr=0.02)
    their_optim = torch.optim.Adam(twin.parameters(), lr=0.02)
    for _ in range(4):
        optim.zero_grad()
        loss = tw.nn.functional.cross_entropy(model(tw.tensor(images)), tw.tensor(masks))
        loss.backward()
        optim.step()
        their_optim.zero_grad()
        their_loss = tF.cross_entropy(twin(torch.from_numpy(images)), torch.from_numpy(masks))
        their_loss.backward()
        their_optim.step()
        assert loss.item() == pytest.approx(their_loss.item(), rel=1e-9)


def test_unet_learns_to_segment_squares(backend: str) -> None:
    images, masks = _shapes(8, 19, 21, seed=0)
    model = UNet(1, 2, base_channels=4, depth=2)
    optim = tw.optim.Adam(model.parameters(), lr=0.02)
    x, y = tw.tensor(images, dtype=tw.float32), tw.tensor(masks)
    losses = []
    for _ in range(30):
        optim.zero_grad()
        loss = tw.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    test_images, test_masks = _shapes(8, 19, 21, seed=1)
    with tw.no_grad():
        predicted = np.asarray(model(tw.tensor(test_images, dtype=tw.float32)).argmax(1))
    both = (predicted == 1) & (test_masks == 1)
    either = (predicted == 1) | (test_masks == 1)
    # Intersection over union on unseen images; calling every pixel a square scores ~0.1.
    assert both.sum() / either.sum() > 0.6


@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_ctc_speech_model_matches_its_pytorch_twin(backend: str, rnn: str) -> None:
    model = CTCSpeechModel(4, 5, hidden=3, rnn=rnn).double()
    twin = _twin_of(model, _TwinSpeech(4, 5, 3, rnn))
    rng = np.random.default_rng(0)
    x, lengths = rng.standard_normal((3, 9, 4)), np.array([9, 6, 3])
    targets, target_lengths = rng.integers(1, 5, (3, 2)), np.array([2, 1, 1])
    mine_x, their_x = tw.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    log_probs, out_lengths = model(mine_x, tw.tensor(lengths))
    expected, their_lengths = twin(their_x, torch.from_numpy(lengths))
    assert tuple(log_probs.shape) == (5, 3, 5) and out_lengths.tolist() == [5, 3, 2]
    assert out_lengths.tolist() == their_lengths.tolist()
    assert_close(log_probs, expected)
    loss = tw.nn.CTCLoss()(log_probs, tw.tensor(targets), out_lengths, tw.tensor(target_lengths))
    their_loss = tnn.CTCLoss()(
        expected, torch.from_numpy(targets), their_lengths, torch.from_numpy(target_lengths)
    )
    assert_close(loss, their_loss)
    loss.backward()
    their_loss.backward()
    assert_close(mine_x.grad, their_x.grad)
    _assert_grads_match(model, twin)


def test_ctc_speech_model_checks_its_input() -> None:
    model = CTCSpeechModel(4, 3, hidden=2)
    with pytest.raises(ValueError, match=r"expected padded features of shape \(N, T, 4\)"):
        model(tw.zeros(2, 5, 3), [5, 5])
    with pytest.raises(ValueError, match=r"lengths must hold 2 values in \[1, 5\]"):
        model(tw.zeros(2, 5, 4), [5, 6])
    with pytest.raises(ValueError, match="rnn must be one of gru, lstm"):
        CTCSpeechModel(4, 3, rnn="rnn")


def test_greedy_decode_collapses_repeats_and_drops_blanks() -> None:
    rng = np.random.default_rng(0)
    paths = np.array([[1, 1, 0, 1, 2, 2, 0, 0], [0, 3, 3, 3, 0, 0, 2, 1]]).T  # (T, N)
    scores = rng.random((8, 2, 4))
    np.put_along_axis(scores, paths[..., None], 2.0, axis=-1)  # each frame's best class
    log_probs = tw.tensor(scores).log_softmax(-1)
    assert greedy_decode(log_probs, tw.tensor([8, 6])) == [[1, 1, 2], [3]]
    assert greedy_decode(log_probs, [3, 8], blank=3) == [[1, 0], [0, 0, 2, 1]]


def _utterances(
    n: int, prototypes: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Padded features (N, T, F) and lengths, padded labels (N, 3) and label counts: each
    label (1 to 4) is 4 to 6 noisy frames of its own prototype, with 2 to 3 silent frames
    before each."""
    rng = np.random.default_rng(seed)
    sequences, labels = [], []
    for _ in range(n):
        word = rng.integers(1, len(prototypes), rng.integers(1, 4))
        frames = []
        for label in word:
            frames += [np.zeros((rng.integers(2, 4), prototypes.shape[1]))]
            frames += [np.tile(prototypes[label], (rng.integers(4, 7), 1))]
        sequences.append(np.concatenate(frames))
        labels.append(word)
    lengths = np.array([len(s) for s in sequences])
    x = np.zeros((n, lengths.max(), prototypes.shape[1]))
    for i, s in enumerate(sequences):
        x[i, : len(s)] = s + 0.3 * rng.standard_normal(s.shape)
    targets = np.zeros((n, 3), dtype=np.int64)
    for i, word in enumerate(labels):
        targets[i, : len(word)] = word
    return x, lengths, targets, np.array([len(w) for w in labels])


def test_ctc_speech_model_learns_to_transcribe(backend: str) -> None:
    prototypes = np.random.default_rng(7).standard_normal((5, 6))
    x, lengths, targets, counts = _utterances(24, prototypes, seed=0)
    model = CTCSpeechModel(6, 5, hidden=12)
    optim = tw.optim.Adam(model.parameters(), lr=0.03)
    ctc = tw.nn.CTCLoss()
    batch = tw.tensor(x, dtype=tw.float32), tw.tensor(lengths)

    def accuracy(data: tuple) -> float:
        x, lengths, targets, counts = data
        with tw.no_grad():
            decoded = greedy_decode(*model(tw.tensor(x, dtype=tw.float32), tw.tensor(lengths)))
        truth = [list(t[:c]) for t, c in zip(targets.tolist(), counts)]
        return float(np.mean([d == t for d, t in zip(decoded, truth)]))

    unseen = _utterances(24, prototypes, seed=1)
    before = accuracy(unseen)
    losses = []
    for _ in range(40):
        optim.zero_grad()
        log_probs, out_lengths = model(*batch)
        loss = ctc(log_probs, tw.tensor(targets), out_lengths, tw.tensor(counts))
        loss.backward()
        optim.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    assert before < 0.2 and accuracy(unseen) >= 0.8  # whole transcripts right
