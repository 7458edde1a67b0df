"""A keyword-spotting front end and classifier written without torchaudio, in float64: synthetic
chirps and tones, ``torch.stft`` (``hann_window``, ``center=True``, ``return_complex=True``)
to a power spectrogram, a mel filterbank built by hand (Hz/mel conversions with ``log10``,
triangular filters by ``torch.minimum``/``clamp``), log-mel by ``log(... + 1e-6)``,
SpecAugment time and frequency masks by ``masked_fill`` of ``arange`` comparisons, per-
utterance normalisation, a small CNN classifier trained with AdamW; then ``torch.istft``
reconstruction of a signal and mu-law companding (``sign``, ``log1p``, ``expm1``) with
8-bit quantisation by ``bucketize``. Returns the losses, the reconstruction error, the
quantised codes and some features.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE = 800
N_FFT, HOP, N_MELS = 64, 16, 10


def hz_to_mel(f):
    return 2595.0 * torch.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10 ** (m / 2595.0) - 1.0)


def mel_filterbank(n_freqs, n_mels, sample_rate):
    freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_pts = torch.linspace(hz_to_mel(torch.tensor(0.0)), hz_to_mel(torch.tensor(sample_rate / 2)),
                           n_mels + 2)  # fmt: skip
    f_pts = mel_to_hz(m_pts)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - freqs.unsqueeze(1)
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return torch.clamp(torch.minimum(down, up), min=0.0)  # (n_freqs, n_mels)


def make_batch(n=6, length=320):
    t = torch.arange(length) / SAMPLE_RATE
    labels = torch.randint(0, 3, (n,))
    f0 = 60 + 200 * torch.rand(n, 1)
    chirp = torch.sin(2 * math.pi * (f0 * t + 150 * t**2))
    tone = torch.sin(2 * math.pi * f0 * t)
    noise = 0.5 * torch.randn(n, length)
    waves = torch.where((labels == 0)[:, None], chirp, torch.where((labels == 1)[:, None], tone,
                                                                   noise))  # fmt: skip
    return waves + 0.05 * torch.randn(n, length), labels


class LogMel(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.register_buffer("fb", mel_filterbank(N_FFT // 2 + 1, N_MELS, SAMPLE_RATE))

    def forward(self, waves):
        spec = torch.stft(waves, N_FFT, hop_length=HOP, window=self.window, center=True,
                          return_complex=True)  # fmt: skip
        power = spec.abs().pow(2)  # (batch, freq, frames)
        mel = torch.matmul(power.transpose(1, 2), self.fb).transpose(1, 2)
        return torch.log(mel + 1e-6)


def spec_augment(x, freq_width=2, time_width=3):
    b, f, t = x.shape
    f0 = torch.randint(0, f - freq_width, (b, 1, 1))
    t0 = torch.randint(0, t - time_width, (b, 1, 1))
    fi = torch.arange(f).view(1, f, 1)
    ti = torch.arange(t).view(1, 1, t)
    mask = ((fi >= f0) & (fi < f0 + freq_width)) | ((ti >= t0) & (ti < t0 + time_width))
    return x.masked_fill(mask, x.mean().item())


class KeywordNet(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.frontend = LogMel()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        )  # fmt: skip
        self.fc = nn.Linear(8, classes)

    def forward(self, waves, augment=False):
        x = self.frontend(waves)
        x = (x - x.mean(dim=(1, 2), keepdim=True)) / (x.std(dim=(1, 2), keepdim=True) + 1e-5)
        if augment:
            x = spec_augment(x)
        return self.fc(self.conv(x.unsqueeze(1)).flatten(1))


def mu_law_encode(x, channels=256):
    mu = channels - 1
    y = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / math.log1p(mu)
    edges = torch.linspace(-1, 1, channels + 1)[1:-1]
    return torch.bucketize(y, edges)


def mu_law_decode(codes, channels=256):
    mu = channels - 1
    y = (codes.double() + 0.5) / channels * 2 - 1
    return torch.sign(y) * torch.expm1(torch.abs(y) * math.log1p(mu)) / mu


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return train(args)
    finally:
        torch.set_default_dtype(previous)


def train(args):
    torch.manual_seed(0)
    model = KeywordNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.05)
    out = []
    for _ in range(args.steps):
        waves, labels = make_batch()
        optimizer.zero_grad()
        logits = model(waves, augment=True)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        out += [loss.item(), (logits.argmax(1) == labels).double().mean().item()]
    model.eval()
    waves, _ = make_batch(2)
    with torch.no_grad():
        features = model.frontend(waves)
        out += list(features.shape) + features[0, :, 2].tolist()
        spec = torch.stft(waves, N_FFT, hop_length=HOP, window=model.frontend.window,
                          return_complex=True)  # fmt: skip
        back = torch.istft(spec, N_FFT, hop_length=HOP, window=model.frontend.window,
                           length=waves.shape[-1])  # fmt: skip
        out.append((back - waves).abs().max().item() < 1e-9)
        out += [spec.real[0, 3, 4].item(), spec.imag[1, 5, 6].item(), spec.angle()[0, 2, 3].item()]
    clipped = (waves[0] / waves[0].abs().max()).clamp(-1, 1)
    codes = mu_law_encode(clipped)
    decoded = mu_law_decode(codes)
    out += codes[:12].tolist() + [(decoded - clipped).abs().max().item()]
    out.append(codes.dtype == torch.int64)
    return out
