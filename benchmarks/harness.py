"""What the benchmarks here share: thread settings, interleaved timing, medians and ratios.

Import this module before NumPy, torch or TensorWeaver. It reads ``--threads`` (default 1)
from the command line and sets the thread count of NumPy's BLAS and of torch's OpenMP,
which those libraries read only when they load, and sets ``OMP_WAIT_POLICY=PASSIVE``
(unless already set): without it torch's idle OpenMP threads spin, and a step slows
tenfold when another process keeps the second core busy. One thread is the default
because the machines are shared: every candidate then gets the same single core. (NumPy's
OpenBLAS has no passive setting: with two threads on a busy two-core machine an MLP step
was measured 15x slower than with one.)

The heap: glibc returns freed memory at the top of its heap to the OS once more than a
threshold is free, and the next large allocation then faults every page back in (about
2 us a page). Whether a step pays that depends on the order in which its arrays happen to
be freed, and on what else the process allocated, not on the framework: the same torch CNN
step measured 10.6 ms with 0 faults and 15 ms with 1,750 faults in two runs. So by default
this module sets glibc's trim and mmap thresholds high (``mallopt``), for every candidate
alike, before anything is measured; ``--malloc default`` leaves glibc's own settings.

Timing: each candidate is a function doing one unit of work. Every round times each
candidate once (a sample of ``calls`` calls, sized to about ``--sample-ms``), in an
order that rotates from round to round, so that the machine's drifting load hits all of
them alike; the figure quoted is the median over rounds. With one thread the clock is
this process's CPU time by default: under a load of 5 on two cores, perf_counter medians
of a 1 us op moved by 2-3x from run to run, CPU-time medians by a few per cent.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

if "numpy" in sys.modules or "torch" in sys.modules:
    raise RuntimeError(
        "benchmarks/harness.py must be imported before numpy and torch: it sets their thread "
        "counts, which they read only when they load"
    )


def _process_options(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options that act when this module loads (read early from the command line)."""
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads for NumPy's BLAS and for torch, alike (default 1)",
    )
    p.add_argument(
        "--malloc",
        choices=("steady", "default"),
        default="steady",
        help="steady: glibc keeps freed heap memory, so no candidate's time depends on when it "
        "returns memory to the OS; default: glibc's own settings (see benchmarks/harness.py)",
    )
    return p


def _steady_heap() -> str:
    """Keep freed heap memory in the process (glibc): what the run's heap setting was."""
    if platform.libc_ver()[0] != "glibc":
        return "default (not glibc)"
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
    ok = libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30)
    return "steady (glibc trim 1 GiB, mmap 32 MiB)" if ok else "default (mallopt refused)"


_EARLY = _process_options(argparse.ArgumentParser(add_help=False)).parse_known_args()[0]
THREADS = _EARLY.threads
MALLOC = _steady_heap() if _EARLY.malloc == "steady" else "default"
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def parser(
    description: str, repeat: int = 11, sample_ms: float = 20.0, clock: str | None = None
) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark takes."""
    if clock is None:
        clock = "cpu" if THREADS == 1 else "wall"
    p = _process_options(
        argparse.ArgumentParser(
            description=description, formatter_class=argparse.RawDescriptionHelpFormatter
        )
    )
    p.add_argument("--repeat", type=int, default=repeat, help="rounds (samples per candidate)")
    p.add_argument(
        "--sample-ms", type=float, default=sample_ms, help="target duration of one sample"
    )
    p.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default=clock,
        help="wall: time.perf_counter; cpu: this process's CPU time (time.process_time), which "
        "leaves out the time other processes hold the core, so it is steady on a shared "
        "machine, but it adds up the time of all threads (default: cpu with one thread)",
    )
    return p


def setup_torch(torch: Any) -> None:
    """Give torch the same thread count as NumPy."""
    torch.set_num_threads(THREADS)


def describe(args: argparse.Namespace, torch: Any = None) -> str:
    """One line saying how the run was timed and with which thread settings."""
    line = (
        f"{args.clock} clock, median of {args.repeat} interleaved rounds; threads: BLAS "
        f"{os.environ['OPENBLAS_NUM_THREADS']}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}; "
        f"heap {MALLOC}"
    )
    if torch is not None:
        line += f", torch {torch.get_num_threads()} (torch {torch.__version__})"
    return line


def _calls_for(fn: Callable[[], Any], sample_s: float, clock: Callable[[], float]) -> int:
    """How many calls of ``fn`` fill about ``sample_s`` seconds (after warming it up)."""
    fn()
    calls, elapsed = 1, 0.0
    while True:
        start = clock()
        for _ in range(calls):
            fn()
        elapsed = clock() - start
        if elapsed >= sample_s / 5 or calls >= 1 << 24:
            break
        calls *= 4
    return max(1, round(calls * sample_s / max(elapsed, 1e-9)))


def _sample(fn: Callable[[], Any], calls: int, clock: Callable[[], float]) -> float:
    gc.collect()  # every sample starts with no garbage left by the one before (cheap: frozen)
    start = clock()
    for _ in range(calls):
        fn()
    return (clock() - start) / calls


def measure(candidates: dict[str, Callable[[], Any]], args: argparse.Namespace) -> dict[str, float]:
    """The median seconds per call of each candidate, over ``args.repeat`` interleaved rounds
    of samples of about ``args.sample_ms``, on ``args.clock``."""
    repeat, sample_ms, clock = args.repeat, args.sample_ms, CLOCKS[args.clock]
    names = list(candidates)
    # Objects alive now (torch's modules, the workloads' arrays) are never garbage: freezing
    # them keeps the collector from rescanning them, which costs 0.2 s a full collection.
    gc.collect()
    gc.freeze()
    calls = {n: _calls_for(candidates[n], sample_ms / 1e3, clock) for n in names}
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeat):
        shift = r % len(names)
        for n in names[shift:] + names[:shift]:
            times[n].append(_sample(candidates[n], calls[n], clock))
    return {n: statistics.median(ts) for n, ts in times.items()}


def ratio(a: float, b: float) -> str:
    return f"{a / b:6.2f}x"


def verdict(value: float, target: float) -> str:
    """``value`` (a ratio) against a target ratio."""
    return f"target <= {target:.2f}x: {'met' if value <= target else 'MISSED'}"
