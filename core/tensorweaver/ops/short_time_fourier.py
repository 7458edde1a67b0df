"""``tw.stft`` and ``tw.istft``: the short-time Fourier transform of a signal (frames
``hop_length`` apart, each times ``window``, through ``tw.fft``) and its inverse by
windowed overlap-add; differentiable through the transforms, the framing and the padding.
PyTorch's signatures, defaults, warnings and errors."""

from __future__ import annotations

import warnings

from tensorweaver.contract import dtypes
from tensorweaver.ops import creation as cr
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.complex import view_as_real
from tensorweaver.tensor import Tensor


def _window(
    window: Tensor | None, n_fft: int, win_length: int | None, like: Tensor, fn: str
) -> Tensor:
    """``window`` (ones when None, with PyTorch's warning) zero-padded at both ends to
    ``n_fft`` samples."""
    win_length = n_fft if win_length is None else win_length
    if not 0 < win_length <= n_fft:
        raise RuntimeError(
            f"{fn}: expected 0 < win_length <= n_fft, but got win_length={win_length}"
        )
    if window is None:
        warnings.warn(
            f"{fn}: A window was not provided. A rectangular window will be applied, which is "
            "known to cause spectral leakage. Pass window=tw.ones(n_fft) to use one without "
            "this warning, or tw.hann_window(n_fft) to reduce the leakage.",
            UserWarning,
            stacklevel=3,
        )
        real = like.dtype.to_real() if like.dtype.is_complex else like.dtype
        window = cr.ones(win_length, dtype=real, device=like.device)
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"{fn}: expected a 1D window tensor of size equal to win_length={win_length}, but "
            f"got window with size {list(window.shape)}"
        )
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    from tensorweaver.nn import functional as F

    return F.pad(window, [left, n_fft - win_length - left])


def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
) -> Tensor:
    """The spectrum of each frame of the 1-d signal ``input`` (or of each row of a batch):
    ``(n_fft // 2 + 1, frames)`` bins when ``onesided`` (the default for real input and
    window), ``(n_fft, frames)`` otherwise; ``center`` pads ``n_fft // 2`` samples at both
    ends by ``pad_mode`` first."""
    from tensorweaver import fft
    from tensorweaver.nn import functional as F

    fn = "stft"
    real_input = not input.dtype.is_complex and (window is None or not window.dtype.is_complex)
    if return_complex is None:
        if real_input:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and "
                "will further require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    if not return_complex:
        warnings.warn(
            "stft with return_complex=False is deprecated: pass return_complex=True and call "
            "tw.view_as_real on the result for the old format.",
            UserWarning,
            stacklevel=2,
        )
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{fn}: expected a 1D or 2D tensor, got shape {tuple(input.shape)}")
    hop = n_fft // 4 if hop_length is None else hop_length
    if hop <= 0:
        raise RuntimeError(f"{fn}: expected hop_length > 0, but got hop_length={hop}")
    batched = input.ndim == 2
    signal = input if batched else mv.unsqueeze(input, 0)
    if center:
        pad = n_fft // 2
        signal = mv.squeeze(F.pad(mv.unsqueeze(signal, 1), [pad, pad], mode=pad_mode), 1)
    length = signal.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(
            f"{fn}: expected 0 < n_fft <= {length} (the padded signal's length), but got "
            f"n_fft={n_fft}"
        )
    frames = signal.unfold(-1, n_fft, hop) * _window(window, n_fft, win_length, input, fn)
    sided = real_input if onesided is None else onesided
    if sided and not real_input:
        raise RuntimeError(f"{fn}: onesided output is not possible with complex input or window")
    norm = "ortho" if normalized else "backward"
    spectrum = fft.rfft(frames, dim=-1, norm=norm) if sided else fft.fft(frames, dim=-1, norm=norm)
    # named as PyTorch's nodes: its transpose_ of the spectrum, then squeeze_ of a 1-d batch
    out = labelled(mv.transpose(spectrum, -1, -2), "TransposeBackward1", spectrum)
    out = out if batched else labelled(mv.squeeze(out, 0), "SqueezeBackward4", out)
    return out if return_complex else view_as_real(out)


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The signal whose ``stft`` (with the same arguments) is the complex ``input``
    ``(bins, frames)`` or ``(batch, bins, frames)``: each frame's inverse transform times
    ``window``, overlapped and added, divided by the overlapped squares of the window."""
    from tensorweaver import fft

    fn = "istft"
    if not input.dtype.is_complex:
        raise RuntimeError(
            f"{fn} requires a complex-valued input tensor, got {input.dtype.name}; pass "
            "stft(..., return_complex=True)'s result or tw.view_as_complex of the old format"
        )
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{fn}: expected a tensor with 2 or 3 dimensions, got {input.ndim}")
    hop = n_fft // 4 if hop_length is None else hop_length
    batched = input.ndim == 3
    spectrum = mv.transpose(input if batched else mv.unsqueeze(input, 0), -1, -2)
    sided = (spectrum.shape[-1] != n_fft) if onesided is None else onesided
    if sided and spectrum.shape[-1] != n_fft // 2 + 1:
        raise RuntimeError(
            f"{fn}: expected the frequency dimension (-2) of input to be {n_fft // 2 + 1} "
            f"(onesided) or {n_fft}, but got {spectrum.shape[-1]}"
        )
    if not sided and spectrum.shape[-1] != n_fft:  # (a real result reads only half of it)
        raise RuntimeError(
            f"{fn}: expected the frequency dimension (-2) of input to match n_fft = {n_fft} "
            f"when onesided=False, but got {spectrum.shape[-1]}"
        )
    if not return_complex and window is not None and window.dtype.is_complex:
        raise RuntimeError(
            f"{fn}: Complex windows are incompatible with return_complex=False; pass "
            "return_complex=True"
        )
    if return_complex and sided:
        raise RuntimeError(f"{fn}: cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    if return_complex:
        frames = fft.ifft(spectrum, dim=-1, norm=norm)
    else:
        # A real result reads only the first n_fft // 2 + 1 bins and takes the rest as their
        # Hermitian mirror (PyTorch's c2r), not the real part of the full inverse.
        half = spectrum if sided else spectrum[..., : n_fft // 2 + 1]
        frames = fft.irfft(half, n=n_fft, dim=-1, norm=norm)
    win = _window(window, n_fft, win_length, frames, fn)
    frames = frames * win
    batch, count = frames.shape[0], frames.shape[1]
    total = n_fft + hop * (count - 1)
    starts = mv.reshape(
        cr.arange(0, count * hop, hop, dtype=dtypes.int64, device=input.device), (-1, 1)
    )
    positions = mv.reshape(
        starts + cr.arange(n_fft, dtype=dtypes.int64, device=input.device), (-1,)
    )
    signal = cr.zeros((batch, total), dtype=frames.dtype, device=input.device)
    signal = signal.index_add(1, positions, mv.reshape(frames, (batch, -1)))
    square = win * win  # (PyTorch's envelope: the window squared, not |window|**2)
    envelope = cr.zeros(total, dtype=square.dtype, device=input.device)
    envelope = envelope.index_add(
        0, positions, mv.reshape(mv.expand(square, (count, n_fft)), (-1,))
    )
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + length
    stop = min(end, total)
    if float(envelope[start:stop].abs().min().item()) < 1e-11:
        raise RuntimeError(
            f"{fn}: window overlap add min is below 1e-11: the window's squares overlapped "
            f"{hop} samples apart vanish somewhere (the NOLA condition fails); use another "
            "window or a smaller hop_length"
        )
    out = signal[:, start:stop] / envelope[start:stop]
    if end > total:
        from tensorweaver.nn import functional as F

        out = F.pad(out, [0, end - total])
    return out if batched else mv.squeeze(out, 0)
