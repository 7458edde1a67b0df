"""The one error type a bad checkpoint file raises."""

from __future__ import annotations

import safetensors


class SafetensorsError(safetensors.SafetensorError, ValueError, RuntimeError):
    """A file ``tw.load`` cannot trust: not valid safetensors, outside TensorWeaver's bounds, or
    damaged since it was saved (its checksum does not match); or a ``torch.save`` checkpoint
    that is damaged (zip, storage records, CRC-32) or in a format ``tw.load`` refuses (legacy
    pickle, TorchScript). The message names the file and the fault.

    It is a ``safetensors.SafetensorError`` (what the library raises for a bad file: ``tw.load``
    re-raises the library's errors as this one, with the file's name, the library's error as
    its ``__cause__``), a ``ValueError`` (what ``tw.load`` raised before) and a
    ``RuntimeError`` (what ``torch.load`` raises for a truncated or damaged checkpoint), so
    ``except tw.SafetensorsError``, ``except safetensors.SafetensorError``, ``except
    ValueError`` and a PyTorch script's ``except RuntimeError`` all catch it.
    """
