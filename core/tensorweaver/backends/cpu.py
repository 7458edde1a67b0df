"""``tw.backends.cpu``: the host's vector instruction set, as PyTorch reports it."""

from __future__ import annotations

from tensorweaver.backends import backend_torch


def get_cpu_capability() -> str:
    """PyTorch's name for the widest vector instructions its CPU kernels use here
    (``"AVX512"``, ``"AVX2"``, ``"DEFAULT"``; ``"VSX"``, ``"ZVECTOR"``, ``"SVE256"`` elsewhere).

    Answered by the torch backend's torch, else (without the torch plugin) from the CPU's
    flags on Linux x86, as PyTorch decides it."""
    torch = backend_torch()
    if torch is not None:
        return str(torch.backends.cpu.get_cpu_capability())
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if "flags" in line), [])
    except OSError:
        return "DEFAULT"
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags):
        return "AVX512"
    if {"avx2", "fma"} <= set(flags):
        return "AVX2"
    return "DEFAULT"
