"""tw.linalg on torch:cpu against the same calls in torch.linalg (issue 14).

Run: python benchmarks/linalg_ops.py [--repeat 11] [--threads 1] [--n 64] [--batch 8] [--loss sum]

Each workload is a linear-algebra function on a batch of ``--batch`` matrices of ``--n`` x
``--n`` (float64, made well conditioned), written once against ``torch`` and once against
``tensorweaver`` on the torch backend, timed as a forward pass (fwd) and as a forward and
backward pass (fwd+bwd); the two run interleaved (see harness.py) and the ratio is
TensorWeaver's time over torch's. The goal is at most 1.10x: the torch backend computes each
whole function with torch's own kernel and gradient (``linalg_function`` in the IR), so the
core adds only its graph, checks and wrappers. The forward pass times the function alone, and
the backward runs from a fixed random gradient of its outputs (as fft_ops.py does), so that
no other op is timed; ``--loss sum`` times each output's ``.sum()`` too and runs backward
from it, as every table below up to the thirtieth session's did.

On this project's 2-core machine (an Intel Xeon, family 6 model 167, two vCPUs under KVM),
shared with other jobs (one thread, CPU clock; medians of three runs, the ratio's range over
them; load 10-15 from other agents, 2026-12-05 06:20 UTC), 8 x 64 x 64, in ms (torch, tw)
and ratio:

| workload | fwd | fwd+bwd |
|---|---|---|
| cholesky | 0.111, 0.121: 1.07x (1.04-1.39) | 0.720, 0.805: 1.07x (1.05-1.12) |
| solve | 0.187, 0.203: 1.09x (1.07-1.09) | 0.396, 0.474: 1.20x (1.19-1.20) |
| cholesky_solve (two calls) | 0.147, 0.176: 1.13x (1.12-1.36) | 1.03, 1.21: 1.18x (1.13-1.19) |
| inv | 0.288, 0.315: 1.09x (1.09-1.12) | 0.712, 0.793: 1.11x (1.11-1.12) |
| det | 0.181, 0.193: 1.07x (1.03-1.08) | 0.707, 0.796: 1.14x (1.13-1.23) |
| slogdet | 0.163, 0.174: 1.08x (1.07-1.09) | 0.497, 0.587: 1.18x (1.16-1.19) |
| eigvalsh | 0.814, 0.842: 1.03x (1.03-1.03) | 2.37, 2.41: 1.04x (1.01-1.06) |
| eigh (both outputs) | 1.92, 2.00: 1.04x (1.02-1.04) | 2.80, 2.94: 1.04x (1.03-1.05) |
| qr (R) | 0.452, 0.478: 1.05x (1.04-1.06) | 1.10, 1.19: 1.07x (1.07-1.09) |
| svdvals | 1.29, 1.32: 1.02x (1.02-1.07) | 4.07, 4.21: 1.03x (1.02-1.04) |
| lu_factor | 0.158, 0.171: 1.07x (1.06-1.08) | 1.17, 1.22: 1.08x (1.04-1.12) |
| solve_triangular | 0.019, 0.023: 1.25x (1.21-1.25) | 0.159, 0.226: 1.35x (1.23-1.47) |
| pinv | 3.95, 4.04: 1.03x (1.03-1.03) | 5.32, 5.45: 1.02x (1.00-1.03) |
| matrix_exp | 1.90, 1.94: 1.04x (1.02-1.07) | 14.4, 14.5: 1.00x (0.98-1.01) |

The goal is missed by solve_triangular (both), cholesky_solve (both), and the backward of
solve, inv, det and slogdet; see the sixteenth session's note at the end for where the time
goes. The table of the sessions before (a quieter machine) had every fwd+bwd at 1.01-1.11x.

The backward of a whole function calls torch's one graph node for it directly where the
recorded graph is just that node (``_call_node`` in the torch plugin's ``linalg.py``): torch's
engine run for a one-node graph cost 30 us of a 170 us solve_triangular backward on a loaded
CPU. A function with several differentiable outputs (eigh, svd, qr, lu) records one node for
the call, whose backward runs once with the gradients of all the outputs used. The code
before those changes, run between these (two runs, medians), took forward and backward:
solve 1.21x (now 1.08x), cholesky_solve 1.19x (1.08x), eigh 1.18x (1.01x), inv and det
1.10x (1.06x, 1.04x), slogdet 1.11x (1.05x), solve_triangular 1.37x (1.11x).

What is left is a fixed cost per call, a few us forward, on top of torch's kernel: with
grad, solve_triangular's forward took 32.8 us against torch's 22.5 (torch's recording on
detached leaves 4.7 us of it, the core's checks, tensor and node 5.6 us), and the core's
``sum`` 5.1 us against torch's 2.2. It decides the ratio of the calls under ~0.2 ms:
solve_triangular's forward (21 us in torch, sum included) stays near 1.3x. Later (the sixth
session; minima of 40 interleaved rounds of one call on 1 x 2 x 2 matrices, where torch's
solve_triangular takes 2.8 us) TensorWeaver's forward without grad cost 2.7 us more (3.3
before its three argument checks became one test and the plugin's result one tuple): the
plugin's dispatch 0.6 us, the core's ``fused_or_reference`` 1.8 (constructing the result
Tensor 0.5-0.7 of it, the lookups of the backend's fused kernels 0.25), the checks 0.4; the
core's ``sum`` took 2.5 us against torch's 1.6. solve_triangular's forward then measured
1.22x (1.21-1.22, three runs) at 8 x 64 x 64. With --n 128 (one
run, before these changes) all were within 1.10x but solve_triangular (1.20x, 1.18x), solve
(1.15x, 1.15x), cholesky's forward (1.17x; 1.06x with backward) and eigh's forward and
backward (1.13x). Before the whole functions (the core composing the primitives, one run):
forward and backward 1.32x (cholesky), 1.75x (solve), 1.50x (cholesky_solve), 1.62x (inv),
1.53x (slogdet), 1.54x (eigvalsh), 1.76x (qr, through R's diagonal), 1.45x (svdvals), 0.68x
(matrix_exp).

Seventh session: the plugin's table of whole functions takes the arrays and the static
arguments as two tuples and returns a tuple (no unpacking into a lambda, no isinstance).
Counted by callgrind (instructions: exact, where times on the shared machine moved by 10%
between runs), a forward call without grad on 1 x 2 x 2: torch 29.4k, TensorWeaver 49.0k
before, 48.1k after; on 8 x 64 x 64: torch 212k, TensorWeaver 231k (1.09x), and with the
workload's ``.sum()`` 226k against 254k (1.12x; the core's ``sum`` 23.1k against torch's
14.8k). Time, four interleaved runs of HEAD's code, this code and torch (load 6-8), ratio
medians (ranges): forward with the sum 1.30x (1.25-1.40) before, 1.28x (1.16-1.37) after;
solve_triangular alone 1.20x (1.13-1.29), 1.19x (1.16-1.24). What is left of the 19k
instructions over torch per call: the result's ``Tensor.__init__`` 5.6k (building its
``Size`` 2.8k), ``fused_kernel`` 2.7k, the argument check 2.2k, the plugin's dispatch 2.2k
(the two keywords torch parses beyond ``upper`` 0.65k), ``fused_or_reference``'s own code
about 4k; with them, and the slower Python code evicting the kernel's data from the
caches, the forward stays near 1.2x at this size.

Eleventh session (no change to the linalg code; four runs, load 5-6, while another
helper's autograd-engine change was in progress): solve_triangular 1.25x, 1.25x, 1.23x,
1.25x forward and 1.22x, 1.15x, 1.19x, 1.13x with backward; the rest 0.96-1.19x, the calls
under 0.4 ms (solve, cholesky_solve, det, slogdet, lu_factor) at 1.10-1.17x in some runs
and within 1.10x in others.

Sixteenth session (the table above; load 5-15). ``fused_or_reference`` takes its one or two
tensors without a loop and makes a single output without calling ``_dtype``, the plugin
passes ``solve_triangular`` no default keywords and reads a one-root ``grad_fn`` once: about
0.4 us a call (A/B, interleaved, 15 rounds, HEAD's code against this: solve_triangular
alone 1.21x -> 1.18x at 8 x 64 x 64, 1.59x -> 1.53x at 2 x 4 x 4; with backward no change
beyond noise). Where the rest goes (timeit medians, one thread, heap frozen, 8 x 64 x 64):
without grad, solve_triangular costs torch 15.2 us and TensorWeaver 17.4 (the plugin's call
0.3, the result's Tensor 0.4-0.6, the core's frames and checks 1.0), and ``sum`` 1.4
against 2.3: at most 1.7 us over torch's 16.6 keeps 1.10x, so the forward stays near 1.2x
unless the core's Tensor construction and ``sum`` get cheaper. With grad, the forward costs
torch 17.3 us, TensorWeaver 24.2: the plugin's recording on detached leaves 3.4 us over
torch's own (two ``detach().requires_grad_()`` 1.0, the output's detach, the table's
call), the core's node and result 3.4; timed in sections in one loop, forward 26 -> 37 us,
``sum`` 6.3 -> 10, backward 115 -> 124 (the core's engine: 166 Python calls a step at
2 x 4 x 4, 8 tensors made). The harness's tight loop shows a larger gap (130-160 us against
180-225) than these sections add up to, with or without the garbage collector (disabled in
a copy of the harness: the same ratios), not found in the time left. At 2 x 4 x 4 (one run,
load 10): every forward 1.14-1.89x and every fwd+bwd 1.26-1.84x: the 2-3 us forward and
~35 us backward of fixed Python cost against kernels of 5-20 us.

Seventeenth session (2026-12-05 10:40-10:55 UTC, same machine, load 4-7 from other agents
and a clean-clone CI; three runs of ``--only solve_triangular,cholesky_solve,solve,inv,det,
slogdet``, this session's code; ms (torch, tw), ratio median and range):

| workload | fwd | fwd+bwd |
|---|---|---|
| solve_triangular | 0.019, 0.024: 1.24x (1.23-1.26) | 0.160, 0.202: 1.31x (1.26-1.32) |
| cholesky_solve (two calls) | 0.163, 0.183: 1.13x (1.12-1.17) | 1.14, 1.34: 1.15x (1.06-1.22) |
| solve | 0.193, 0.218: 1.12x (1.08-1.13) | 0.420, 0.515: 1.23x (1.23-1.23) |
| inv | 0.324, 0.356: 1.12x (1.08-1.13) | 0.862, 0.911: 1.06x (0.99-1.08) |
| det | 0.192, 0.211: 1.07x (1.06-1.11) | 0.748, 0.836: 1.12x (1.08-1.14) |
| slogdet | 0.170, 0.187: 1.10x (1.09-1.12) | 0.564, 0.666: 1.14x (1.13-1.20) |

The changes: ``fused_or_reference`` makes the usual node (one differentiable output, also
beside LAPACK's ``info``) itself, without ``_record``/``_attach``; the plugin's ``_fused``
walks its inputs once; a two-input ``linalg_function`` node's backward wraps its two
gradients without loops. A/B in one process (the session's starting code and this code
swapped in turn, 25 interleaved rounds, two runs, 8 x 64 x 64, medians):
solve_triangular with its ``sum`` forward 27.8, 27.7 us -> 26.4, 26.2 (torch 23.7, 23.9);
forward and backward 184, 181 -> 170, 166 (torch 202, 155: noisy; the new code always ran
right after the old, so part of the backward's gain may be the order). Where the forward's
time goes (timeit, 1 x 4 x 4 and 8 x 64 x 64): the plugin's recording on detached leaves
1.5 us over torch's call (two ``detach().requires_grad_()`` 0.9, the output's detach 0.3),
its dispatch 1.9, the core's ``fused_or_reference``, result and node 2.6; ``solve`` adds
``raise_for_info`` (1.1 us: the info's bytes read on the host) and a second result Tensor.
Timed in sections in one loop (8 x 64 x 64, load 4-7; torch -> tw, us): solve_triangular
forward 29.5 -> 47.5, ``sum`` 6.9 -> 14.4, backward 150 -> 160; solve 207 -> 240, 6.9 ->
15.6, 158 -> 177. The ``sum`` (ops/reduce.py) and the backward's engine (the graph walk,
the root's gradient, the leaves' ``contiguous``) are outside the linalg code; torch's own
backward node, called directly, is most of the backward (13 us of a 1 x 4 x 4
solve_triangular's). The forward's size-dependent gap at 8 x 64 x 64 (solve: 19 us by the
minimum of 40 rounds, 5 us of it measured in Python) was not found in the time left.

Eighteenth session (2026-12-05 13:05-13:27 UTC, load 3.8-7.9 from other agents; three
runs each of HEAD's code (before) and this session's (after), alternated, each run
interleaving torch and TensorWeaver; ms (torch, tw), ratio median and range):

| workload, fwd | before | after |
|---|---|---|
| solve_triangular | 0.021, 0.028: 1.28x (1.21-1.31) | 0.020, 0.025: 1.24x (1.19-1.27) |
| cholesky_solve | 0.173, 0.210: 1.21x (1.17-1.22) | 0.172, 0.209: 1.22x (1.20-1.26) |
| solve | 0.218, 0.250: 1.15x (1.11-1.15) | 0.215, 0.237: 1.10x (1.09-1.12) |
| inv | 0.337, 0.381: 1.11x (1.11-1.13) | 0.356, 0.404: 1.13x (1.08-1.14) |
| det | 0.222, 0.242: 1.09x (1.07-1.10) | 0.217, 0.248: 1.15x (1.14-1.15) |
| slogdet | 0.183, 0.201: 1.11x (1.10-1.22) | 0.183, 0.206: 1.10x (1.00-1.13) |

| workload, fwd+bwd | before | after |
|---|---|---|
| solve_triangular | 0.254, 0.293: 1.14x (1.04-1.15) | 0.206, 0.263: 1.15x (1.15-1.28) |
| cholesky_solve | 1.25, 1.46: 1.18x (1.17-1.21) | 1.23, 1.37: 1.14x (1.12-1.15) |
| solve | 0.528, 0.596: 1.19x (1.13-1.28) | 0.548, 0.621: 1.16x (1.13-1.17) |
| inv | 0.887, 0.931: 1.05x (1.00-1.06) | 0.868, 0.946: 1.07x (1.01-1.13) |
| det | 0.902, 0.971: 1.09x (1.08-1.14) | 0.882, 0.972: 1.11x (1.10-1.22) |
| slogdet | 0.639, 0.706: 1.10x (1.06-1.17) | 0.664, 0.768: 1.16x (1.14-1.17) |

The one change (ops/reduce.py: the whole-tensor ``sum`` without the keepdim check's
frame, ``kept_shape`` of every axis without a generator, 0.51 -> 0.10 us in every
``loss.sum()`` backward) is below this load's run-to-run noise, which moved one code's
ratios by up to 0.1 between runs; the ratios here are all higher than a quiet machine's.
Not the cause (checked): torch keeps 1 thread (2 interop) after ``set_backend``;
``torch.linalg.solve`` and ``solve_ex`` (what the plugin calls) take the same time
(184.7, 185.4 us median of 15 rounds); the plugin adds no copy, ``contiguous`` or cast on
these paths; inputs and results have torch's strides and 64-byte alignment; no reference
cycle (``gc.collect()`` after 100 steps of each workload finds nothing); the plugin's
call alone costs what torch's does (solve_ex 181.8 against 181.5 us).
Where the time goes, counted by callgrind (instructions per step, 8 x 64 x 64, one
process; exact where timings moved by 10%): solve_triangular and its ``sum`` without grad
226.5k in torch, 252.3k in TensorWeaver: the solve 15.8k over torch's 211.5k (the
plugin's dispatch 2.4k, ``fused_or_reference`` 9.6k of which the result's
``Tensor.__init__`` 4.5k, the wrapper and its check 3.8k), the ``sum`` 23.7k against
15.1k; with backward 984.4k against 1,065k (+81k), solve 3,011k against 3,104k (+93k),
slogdet 3,823k against 3,964k (+140k: its two outputs make three nodes). So the Python
around each call is 1-4% of the instructions but 10-25% of the time. Its cost is cache
misses: callgrind's cache simulation (this CPU's L1: 64 KB instructions, 48 KB data), 50
steps without grad, per step torch -> tw: solve 2,220k -> 2,250k instructions, L1
instruction misses 4.60k -> 5.72k, L1 data misses 19.4k -> 20.5k; solve_triangular 226.6k
-> 251.7k, 2.16k -> 2.94k, 3.72k -> 4.49k. The LAPACK kernel (256 KB of matrices a call)
leaves the interpreter's code and objects out of L1 (and, on the shared machine, out of
L2), so each extra instruction of Python costs several cycles: solve's 2.2k more L1 misses
at ~14 cycles each are ~10 us at 3 GHz, the forward gap the sixteenth and seventeenth
sessions could not find in Python's own time. With backward, most of the Python is the core's
engine, ``Node`` and ``Tensor`` (outside the linalg code: about 160 Python calls a
solve_triangular step, 8 Tensors made, two of them the engine's re-wrapping of the
leaves' gradients). Meeting 1.10x on the calls under ~0.3 ms needs that per-op cost
lower; the linalg code's own share of solve_triangular's 15.8k (dispatch, wrapper,
checks, ``fused_or_reference``) is about 11k instructions, the result's Tensor the rest.

Nineteenth session (2026-12-05 16:05-16:45 UTC, load 9-10 from other agents). The torch
plugin records a call with grad on one detached leaf per input array, kept while the array
lives (``_LEAVES``), where each call made new ones (``detach().requires_grad_()``, 1.5-3 us
a call); it reads the number of a node's outputs once per node class, not from
``_input_metadata`` (a list built at each backward, 0.8 us); a result and its ``info`` skip
a loop and the info's detached copy; ``inv`` skips ``inv_ex``'s named tuple. Callgrind,
instructions per step at 8 x 64 x 64 (before -> after; torch as the eighteenth session
counted it): solve_triangular with backward 1,065.4k -> 1,056.7k (torch 984k), solve with
backward 3,095.3k -> 3,074.9k (torch 3,011k), inv with backward 6,165.8k -> 6,143.6k,
slogdet with backward 3,952.4k -> 3,944.9k (torch 3,823k), det with backward 4,392.1k
both (its input ``a / n`` is a new array each step: no leaf to reuse), solve without grad
2,251.9k -> 2,248.8k, inv without grad 3,515.5k -> 3,507.7k. Three A/B
runs alternated (HEAD's code, then this code), ratio medians before -> after: fwd:
solve_triangular 1.25 -> 1.25, cholesky_solve 1.22 -> 1.21, solve 1.10 -> 1.12, inv 1.07 ->
1.14, det 1.09 -> 1.08, slogdet 1.10 -> 1.13; fwd+bwd: solve_triangular 1.14 -> 0.99,
cholesky_solve 1.23 -> 1.14, solve 1.24 -> 1.24, inv 1.08 -> 1.00, det 1.09 -> 1.15,
slogdet 1.11 -> 1.15. At this load one code's ratio moved by up to 0.2 between runs
(torch's own time by 30%), so only the instruction counts are firm: the gap over torch
with backward fell by a tenth (solve_triangular, 81k -> 72k) to a quarter (solve, 84k ->
64k); the forward's without grad is all but unchanged (the same path). Not met: the
forward of the calls under ~0.3 ms, and solve's backward.

Twenty-first session (2026-12-05 22:37-22:42 UTC, load 8.6-9.3 from other agents). The
public ``cholesky``, ``solve``, ``lu_factor`` and ``inv`` ask the backend for torch's checked
function whole (``linalg_function`` names ``cholesky``, ``solve``, ``lu_factor``, ``inv``), which
reads LAPACK's info in torch's C++ and raises torch's error (the same class and message:
tests/linalg/test_checked_fused_session21.py), where the core made an ``info`` Tensor and
read it on the host (``raise_for_info``, 1.0 us a call); a backend without them gets the
core's composition and check, as before. Three runs of each code, alternated, each
interleaving torch and TensorWeaver (both on the other agents' uncommitted code of the
moment, only this session's linalg files differing); ratio medians (runs), before -> after:

| workload | fwd | fwd+bwd |
|---|---|---|
| cholesky | 1.06x (1.04-1.08) -> 1.06x (1.05-1.10) | 1.02x (1.01-1.03) -> 1.00x (0.98-1.01) |
| solve | 1.08x (1.08-1.09) -> 1.05x (1.02-1.05) | 1.19x (1.16-1.23) -> 1.14x (1.11-1.16) |
| cholesky_solve | 1.14x (1.13-1.17) -> 1.08x (1.07-1.09) | 1.12x (1.10-1.16) -> 1.11x (1.05-1.16) |
| lu_factor | 1.08x (1.08-1.09) -> 1.06x (1.04-1.08) | 1.09x (1.06-1.16) -> 1.04x (1.00-1.06) |
| solve_triangular | 1.22x (1.22) -> 1.23x (1.23-1.24) | 1.24x (1.10-1.62) -> 1.13x (1.06-1.37) |
| det | 1.11x (1.10-1.12) -> 1.10x (1.05-1.11) | 1.11x (1.10-1.16) -> 1.13x (1.10-1.16) |
| slogdet | 1.08x (1.07-1.10) -> 1.06x (1.05-1.09) | 1.17x (1.16-1.20) -> 1.19x (1.16-1.20) |
| inv (*) | 1.09x (1.08-1.14) -> 1.07x (1.04-1.08) | 1.06x (1.04-1.06) -> 1.08x (1.03-1.09) |

(*) inv's change came later: its row is from a second set of three runs each (22:45-22:48,
load 12.5), in which the others moved by up to 0.1 (lu_factor's fwd+bwd 1.01x -> 1.11x,
det's forward, unchanged code, 1.09x -> 1.03x). The rest were within 1.10x in every run of
both codes. Timeit at 1 x 4 x 4 (medians of 15 interleaved rounds, two runs, load 9-11):
``cholesky`` 2.1-2.4 us over torch's call -> 1.8, ``lu_factor`` 3.8 -> 2.9-3.0, ``solve``
3.7-5.3 -> 2.4-3.4. Not met: solve_triangular's
forward (its 1.8 us over torch's 3.4 at 1 x 4 x 4 are the plugin's dispatch 0.2, the result's
Tensor 0.4, ``fused_or_reference``'s own code 0.5, the lookups of the backend's kernels 0.15,
the check and the wrapper 0.45; the core's ``sum`` adds 0.9 over torch's), and the backward
of solve, det and slogdet, whose extra time is the core's engine (another helper's files).

Twenty-fifth session (2026-12-06 10:35-10:53 UTC, load 4-8 from other agents; two new
workloads: the legacy ``triangular_solve`` and ``lstsq``, each one node of PyTorch's for its
outputs). Before, that node's backward ran a nested backward of the core's decomposition
(``one_node.reference_call``); now ``triangular_solve`` records PyTorch's formula
(``linalg_rules.triangular_solve_backward``, its forward computed without a graph), and
``lstsq`` asks the backend for torch's ``linalg.lstsq`` whole (its drivers and its gradient),
PyTorch's formula (``linalg_rules.lstsq_backward``) serving the backends without it. Three
runs of HEAD's code (before) and this code (after), alternated, each interleaving torch and
TensorWeaver (the other helpers' work of the moment in both); ms (torch, tw) of the first
run, ratio per run:

| workload | before | after |
|---|---|---|
| triangular_solve fwd | 0.041, 0.028: 0.68x, 0.68x, 0.67x | 0.042, 0.029: 0.68x, 0.69x, 0.67x |
| triangular_solve fwd+bwd | 0.232, 0.292: 1.26x, 1.44x, 1.23x | 0.214, 0.243: 1.13x, 1.21x, 1.15x |
| lstsq fwd | 0.648, 6.91: 10.66x, 10.67x, 10.89x | 0.618, 0.640: 1.04x, 1.00x, 1.04x |
| lstsq fwd+bwd | 7.95, 12.6: 1.59x, 1.59x, 1.59x | 7.40, 7.52: 1.02x, 1.03x, 1.01x |

(torch's ``triangular_solve`` copies more than ``linalg.solve_triangular``, which the core
calls: hence its forward below torch's.) On NumPy (the formulas alone, an earlier version of
this code; three runs against torch's CPU): triangular_solve fwd+bwd 3.87x, 3.64x, 3.67x ->
3.57x, 3.69x, 3.50x; lstsq 1.33x, 1.26x, 1.36x -> 1.29x, 1.26x, 1.30x. Not met:
triangular_solve's backward: the formula's five tensor ops (107 us against the same torch
calls' 84 at 8 x 64 x 64, timed alone) and the one node's Function machinery.

Twenty-sixth session (2026-12-06 13:50-14:00 UTC, load 4-8 from other agents and a test
run). The node of a call with several outputs (slogdet, qr, eigh, svd, lu, triangular_solve,
lstsq: ``one_node.py``'s ``_LinalgCall``, marked ``_well_formed``) hands its rule's
gradients on without the checks ``function_backward`` makes of a user's Function's
(2-3 us); the formula calls (triangular_solve, lstsq) switch grad mode off without
``no_grad()``'s object (1.4 against 4.0 us, loaded); ``fused_or_reference`` reads
``requires_grad`` and the dtype from the slots (the property's frame only for a view).
Three runs of the session's starting code (before) and this code (after), alternated, each
interleaving torch and TensorWeaver; ratio medians (runs):

| workload | before | after |
|---|---|---|
| solve_triangular fwd | 1.24x (1.23-1.24) | 1.22x (1.21-1.23) |
| solve_triangular fwd+bwd | 1.14x (1.09-1.15) | 1.09x (1.08-1.11) |
| slogdet fwd | 1.09x (1.08-1.09) | 1.10x (1.09-1.12) |
| slogdet fwd+bwd | 1.17x (1.15-1.18) | 1.16x (1.12-1.17) |
| triangular_solve fwd | 0.71x (0.70-0.73) | 0.70x (0.68-0.70) |
| triangular_solve fwd+bwd | 1.18x (1.17-1.18) | 1.10x (1.06-1.16) |
| qr fwd+bwd (3 other runs) | 1.10x (1.01-1.10) | 1.06x (1.00-1.07) |

The unchecked hand-on alone, switched on and off in one process (``_well_formed``, 31
interleaved rounds, loaded machine): slogdet fwd+bwd 205 -> 195 us at 1 x 4 x 4, 982 ->
950 at 8 x 64 x 64; qr 174 -> 166, 1764 -> 1735; triangular_solve 156 -> 149, 260 ->
248: three to ten times the checks' own 2-3 us, as the eighteenth session's cache misses
would have it.

Where slogdet's time goes (timeit medians, one thread): on 1 x 4 x 4 torch's step takes
113 us, TensorWeaver's 175, of which the call of torch's backward node 54 (``_call_node``
replaced by a stub returning its result: 120); that node costs 13-16 us called twice in a
row, 25-26 us as the backward's first call of it: the interpreter's work since the
forward (the core's graph, ``sum``, the engine) left torch's code and data out of the
caches. With grad, the forward's recording (``fused_or_reference`` with the backend's call
stubbed out: 10-15 us warm, against 5.7 without grad) is the group of nodes PyTorch's one
node needs (a ctx, the call's node, a node per output, the saved outputs' versions); the
backward's the engine's two nodes, the Slot, the release of the Function node's inputs.
At 8 x 64 x 64 the same step is 135 us over torch's 735 (forward with grad +40 us, ``sum``
+13, backward +100): the Python of the core's engine, ``Node`` and ``Tensor`` (other
helpers' files) and the cache misses it causes in torch's kernels. One run of every
workload after these changes (load 7-8): over 1.10x were solve (1.12x, 1.12x), det fwd+bwd
(1.15x: its ``a / n`` is a core ``div`` with its own node), slogdet (1.11x, 1.11x), qr
fwd+bwd (1.13x), solve_triangular (1.22x, 1.10x), triangular_solve fwd+bwd (1.11x) and
matrix_exp fwd (1.10x); the others 1.00-1.09x.

Twenty-seventh session (2026-12-06 16:55-17:00 UTC, load 5-8; no change to these paths;
three runs, ratio per run): solve_triangular 1.22x, 1.20x, 1.25x forward, 1.07x, 1.09x,
1.09x with backward; slogdet 1.07x, 1.06x, 1.13x and 1.13x, 1.13x, 1.13x; det 1.07x, 1.08x,
1.05x and 1.07x, 1.15x, 1.08x; solve 1.05x, 1.04x, 1.04x and 1.04x, 1.08x, 1.01x. Where
slogdet's step goes (8 x 64 x 64, thread time, medians of 21 interleaved rounds, two runs):
torch 765, 815 us; TensorWeaver 915, 922; the torch calls TensorWeaver makes, run alone
in a loop without the core (slogdet on the cached leaf, the two detaches, ``sum``, the
core's root gradient ``full`` and ``broadcast_to``, torch's node called directly, the
gradient's ``contiguous``) 690, 732: below torch's own step, so all of the gap is the
core's Python and the cache misses it causes in torch's kernels. Per step (cProfile call
counts, 1 x 4 x 4): 106 Python calls, of which the linalg code's 23 (``fused.py`` 4,
``one_node.py`` 9, the plugin's 8, ``determinants.py`` 2) and 67 of the autograd code and
``Tensor`` (node.py 24, tensor.py 16, engine.py 13, function.py 10, gradients.py 4);
solve_triangular's forward with its ``sum`` makes 11 (the plugin 2,
``fused_or_reference`` and ``fused_kernel``, the check, the wrapper, two Tensors, ``sum``,
its ``apply`` and backend call): no cut there is above the run-to-run noise (0.03-0.07 of
a ratio).

Thirtieth session (2026-12-07 02:30-02:50 UTC, load 2-10 from other agents and the lead's
whole-suite run; no change to the linalg code). The method: the forward rows timed each
output's ``.sum()`` beside the function and the backward ran from it (det and matrix_exp
also timed a division of their input inside the call), where fft_ops.py times from a fixed
gradient so that no other op is timed. That sum cost TensorWeaver 1.2-3.9 us over torch's
1.9-2.4 (the core's ``sum``, its result Tensor and, in backward, the root gradient's four
torch calls): more than the whole 10% budget of solve_triangular's 20 us. Now the forward
times the function alone and the backward runs from fixed random gradients of its outputs
(the same arrays for both libraries), the divided matrix a leaf of its own; ``--loss sum``
keeps the old method. Ratios (sum: one run of the old method, what HEAD's script timed;
grad: five runs of the new one, the linalg code unchanged between them):

| workload | fwd: sum (old) / grad (5 runs) | fwd+bwd: sum (old) / grad (5 runs) |
|---|---|---|
| cholesky | 0.88x / 1.14 1.11 1.07 1.07 1.04 | 1.05x / 1.17 0.96 0.92 0.95 0.96 |
| solve | 1.14x / 1.07 1.04 1.04 1.06 1.05 | 1.18x / 0.97 1.02 1.02 1.00 0.98 |
| cholesky_solve | 1.07x / 1.15 1.08 1.10 1.10 1.08 | 1.09x / 0.93 1.01 1.03 0.88 1.03 |
| inv | 1.05x / 1.16 1.05 0.99 1.05 1.06 | 1.08x / 1.17 1.00 1.04 0.99 1.05 |
| det | 0.94x / 1.08 1.07 1.15 1.03 1.08 | 1.09x / 0.96 1.03 1.11 1.01 0.99 |
| slogdet | 1.06x / 1.01 1.08 1.09 1.04 1.09 | 1.08x / 1.16 1.06 1.10 1.17 1.07 |
| eigvalsh | 1.12x / 1.05 1.14 1.12 1.05 1.03 | 1.16x / 1.01 1.04 1.11 1.06 1.07 |
| eigh | 1.05x / 0.95 1.03 1.05 1.06 1.01 | 1.06x / 1.00 1.02 1.02 1.00 1.05 |
| qr | 1.04x / 1.10 1.05 1.04 1.10 0.99 | 1.09x / 1.01 1.08 1.01 0.97 1.10 |
| svdvals | 1.05x / 1.08 1.01 1.00 1.04 1.01 | 1.02x / 1.19 1.00 1.02 1.01 1.03 |
| lu_factor | 1.06x / 0.87 1.00 1.12 1.06 1.05 | 1.08x / 1.00 0.92 0.99 0.97 1.01 |
| solve_triangular | 1.20x / 1.21 1.34 1.13 1.18 1.14 | 1.03x / 0.93 0.98 0.76 0.89 0.94 |
| triangular_solve | 0.73x / 0.59 0.63 0.57 0.63 0.63 | 1.13x / 1.13 0.83 0.82 0.85 0.85 |
| lstsq | 1.12x / 1.02 1.07 0.91 1.06 1.06 | 1.03x / 1.05 1.13 1.00 1.00 0.99 |
| pinv | 1.00x / 1.04 1.01 1.01 1.03 1.02 | 1.13x / 0.97 1.04 0.97 1.00 0.99 |
| matrix_exp | 1.08x / 1.10 1.03 1.05 1.02 1.03 | 1.07x / 1.02 1.04 0.99 1.00 1.01 |

(det's and matrix_exp's first three grad runs still divided inside the call.) At this load
one code's ratio moves by up to 0.17 between runs (inv's forward: 1.16x and 0.99x in two
runs of the same code and method). Timed alone (timeit, process time,
medians of 21-25 interleaved rounds, 8 x 64 x 64, no grad), the workloads that missed in one
run are within 1.03x: eigvalsh 850.7 us in torch, 864.9 in TensorWeaver; cholesky 152.9,
156.9. The one steady miss is solve_triangular's forward (1.13-1.34x), whose 20 us kernel
leaves 2.0 us for the core: torch 20.44 us, the plugin's call 20.62, with the result's Tensor
made and freed 21.51 (0.54 us alone, twice that after the kernel), ``fused_or_reference``
22.39 (its backend look-ups 0.23 of its 0.9 us), the check 22.60, the public function 22.91
(1.12x alone; the harness's loop shows more, the eighteenth session's cache misses). With
grad, slogdet's forward at 2 x 4 x 4 costs torch 20.1 us, the plugin's recording 24.0,
TensorWeaver 37-40: its one node for two outputs (``one_node.py``: the ctx, three Nodes, two
InputShapes, the saved versions) is 5.7 us alone and about twice that after the kernel; at
8 x 64 x 64 its step's gap (100-190 us) is not extra torch work (torch's profiler shows the
same kernels, TensorWeaver's ``contiguous`` of the leaf's gradient where torch's
AccumulateGrad copies) but the core's engine, Node and Tensor Python (other helpers' files)
and the cache misses they cause. The plugin's own Python is below the noise: ``_call_node``
around torch's node 15.0 us against the node called alone 16.3 (1 x 2 x 2).

Thirty-second session (2026-12-07 09:08-09:30 UTC, load 2 rising to 14 from other agents
and test runs). ``fused_or_reference`` tests ``reference_only`` and looks up the backend's
``fused_linalg_backward`` itself (``fused_kernel``'s frame and name look-up less), makes
two outputs (slogdet, qr, eigh, lu_factor) without the loop and list, and sets a one- or
two-input node's edges without ``_float_edges``'s frame. Callgrind, 200 forward calls of
solve_triangular on 16 x 8 x 8 without grad, instructions a call: torch 88.5k, before
106.9k, after 106.1k. Timed (process time, medians of 11-15 interleaved rounds of torch,
HEAD's ``fused_or_reference`` and this one in one process, 192 live tensors and views), the
load's noise is larger than the change: rfft, whose path did not change, measured 1.15x
and 1.16x, 1.20x and 1.11x in the two columns. At 16 x 8 x 8 without grad the ratios
(before, after) are solve_triangular 1.39-1.46x, 1.35-1.36x; slogdet 1.46-1.48x,
1.28-1.45x; det 1.30-1.34x, 1.15-1.30x; lu_factor 1.63-1.75x, 1.55-1.63x; cholesky
1.47-1.59x both: 3-8 us over kernels of 10-40 us. Where solve_triangular's 3.5 us over
torch's 10.0 go there (process time, medians of 11 rounds): the plugin's call 10.5, with
the result's Tensor 11.6, ``fused_or_reference`` 12.7, the public function 13.5. The script
(two of its runs, this code, load 13): 8 x 64 x 64 solve_triangular 1.12x fwd, 0.85x
fwd+bwd; slogdet 0.94x, 1.01x; cholesky_solve 1.17x, 0.95x; det 1.09x, 1.11x; 16 x 8 x 8
solve_triangular 1.50x, 1.12x; slogdet 1.34x, 1.25x; cholesky_solve 1.37x, 1.20x; det
1.46x, 0.99x. On re-reading the change the three trims were undone (they wrote
``fused_kernel``'s test and the output loop out a second time, for ~0.8k instructions a
call that the timings could not tell from noise); the measured costs above still say where
the remaining time goes.
"""

from __future__ import annotations

from typing import Any, Callable

import harness  # noqa: I001  (first: sets thread counts before numpy and torch load)
import numpy as np
import tensorweaver as tw
import torch

TARGET = 1.10

#: name -> f(lib, a, b): the outputs to differentiate (a tensor, or a tuple of them); a is
#: symmetric positive definite (divided by n for the workloads in ``SCALED``), b (n, 3).
WORKLOADS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "cholesky": lambda m, a, b: m.linalg.cholesky(a),
    "solve": lambda m, a, b: m.linalg.solve(a, b),
    "cholesky_solve": lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(a)),
    "inv": lambda m, a, b: m.linalg.inv(a),
    "det": lambda m, a, b: m.linalg.det(a),
    "slogdet": lambda m, a, b: m.linalg.slogdet(a)[1],
    "eigvalsh": lambda m, a, b: m.linalg.eigvalsh(a),
    "eigh": lambda m, a, b: tuple(m.linalg.eigh(a)),  # both outputs, each with a gradient
    "qr": lambda m, a, b: m.linalg.qr(a)[1],
    "svdvals": lambda m, a, b: m.linalg.svdvals(a),
    "lu_factor": lambda m, a, b: m.linalg.lu_factor(a)[0],
    "solve_triangular": lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
    "triangular_solve": lambda m, a, b: m.triangular_solve(b, a).solution,
    "lstsq": lambda m, a, b: m.linalg.lstsq(a, b).solution,
    "pinv": lambda m, a, b: m.linalg.pinv(a),
    "matrix_exp": lambda m, a, b: m.linalg.matrix_exp(a),
}
#: The workloads whose matrix is divided by n (their results stay in range): a leaf of its
#: own, where the tables up to the thirtieth session's timed the division inside each call.
SCALED = ("det", "matrix_exp")


def _summed(outs: Any) -> Any:
    """The outputs in one scalar (``--loss sum``): each one's ``.sum()``."""
    if isinstance(outs, tuple):
        return outs[0].sum() + outs[1].sum()
    return outs.sum()


def _step(
    fn: Callable[[Any, Any, Any], Any], lib: Any, a: Any, b: Any, backward: bool, summed: bool
) -> Callable[[], None]:
    """One forward pass of ``fn`` on ``lib``'s tensors ``a`` and ``b``, and with ``backward``
    the backward pass to them (leaves that require grad): from a fixed random gradient of
    each output, or with ``summed`` from the sum of the outputs' sums (timed too)."""
    if summed:

        def forward_summed() -> None:
            _summed(fn(lib, a, b))

        def step_summed() -> None:
            _summed(fn(lib, a, b)).backward()
            a.grad = b.grad = None

        return step_summed if backward else forward_summed

    def forward() -> None:
        fn(lib, a, b)

    if not backward:
        return forward
    outs = fn(lib, a, b)
    rng = np.random.default_rng(1)  # the same gradients for both libraries
    if isinstance(outs, tuple):
        grads = tuple([lib.tensor(rng.standard_normal(tuple(o.shape))) for o in outs])

        def step_several() -> None:
            lib.autograd.backward(fn(lib, a, b), grads)
            a.grad = b.grad = None

        return step_several
    grad = lib.tensor(rng.standard_normal(tuple(outs.shape)))

    def step() -> None:
        fn(lib, a, b).backward(grad)
        a.grad = b.grad = None

    return step


def main() -> None:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=64, help="matrix size")
    p.add_argument("--batch", type=int, default=8, help="matrices per batch")
    p.add_argument("--only", default="", help="comma-separated workload names")
    p.add_argument(
        "--loss",
        choices=("grad", "sum"),
        default="grad",
        help="grad: backward from a fixed gradient of the outputs, the forward alone timed; "
        "sum: each output's .sum() timed too, backward from it (the tables before the "
        "thirtieth session)",
    )
    args = p.parse_args()
    harness.setup_torch(torch)
    tw.set_backend("torch:cpu")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, args.n, args.n))
    spd = x @ np.swapaxes(x, -1, -2) + args.n * np.eye(args.n)
    rhs = rng.standard_normal((args.batch, args.n, 3))
    print(harness.describe(args, torch) + f"; loss: {args.loss}")
    names = [n for n in args.only.split(",") if n] or list(WORKLOADS)
    for name in names:
        arrays = (spd / args.n if name in SCALED else spd, rhs)
        for backward in (False, True):
            candidates = {
                label: _step(
                    WORKLOADS[name],
                    m,
                    *_leaves(m, arrays, backward),
                    backward,
                    args.loss == "sum",
                )
                for label, m in (("torch", torch), ("tw-torch", tw))
            }
            times = harness.measure(candidates, args)
            ours, theirs = times["tw-torch"], times["torch"]
            what = f"{name} {'fwd+bwd' if backward else 'fwd'}"
            print(
                f"{what:24s} torch {theirs * 1e3:8.3f} ms  tw-torch {ours * 1e3:8.3f} ms  "
                f"{harness.ratio(ours, theirs)}  ({harness.verdict(ours / theirs, TARGET)})"
            )


def _leaves(lib: Any, arrays: tuple, grad: bool) -> list:
    return [lib.tensor(x, requires_grad=grad) for x in arrays]


if __name__ == "__main__":
    main()
