"""What a PyTorch user does on a CUDA GPU, each against raw PyTorch on the same GPU.

Run by ``scripts/gpu-check.sh run`` on a machine with a GPU (CI has none). Each check prints
``ok`` or ``FAIL`` with the reason and the script goes on; it exits 1 when one failed.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
import traceback
from typing import Callable

import numpy as np
import tensorweaver as tw
import torch

CHECKS: list[tuple[str, Callable[[], str | None]]] = []


def check(fn: Callable[[], str | None]) -> Callable[[], str | None]:
    CHECKS.append((fn.__name__, fn))
    return fn


def close(ours: tw.Tensor, theirs: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(
        ours.detach().cpu().numpy().astype(np.float64),
        theirs.detach().cpu().double().numpy(),
        rtol=rtol,
        atol=atol,
    )


@check
def devices_and_queries() -> str:
    assert tw.cuda.is_available() and tw.cuda.device_count() == torch.cuda.device_count()
    assert tw.cuda.get_device_name(0) == torch.cuda.get_device_name(0)
    assert tw.cuda.get_device_capability(0) == torch.cuda.get_device_capability(0)
    assert tw.cuda.is_bf16_supported() == torch.cuda.is_bf16_supported()
    x = tw.ones(1024, 1024, device="cuda")
    tw.cuda.synchronize()
    allocated = tw.cuda.memory_allocated()
    assert allocated >= 4 << 20, allocated
    assert x.is_cuda and x.device.type == "cuda" and x.device.index == 0, repr(x.device)
    return f"{tw.cuda.get_device_name(0)}, {allocated >> 20} MiB allocated, device {x.device}"


@check
def moves_between_host_and_gpu() -> None:
    a = tw.arange(12.0).reshape(3, 4)
    g = a.cuda()
    assert g.is_cuda and not a.is_cuda
    h = g.to("cpu")
    assert not h.is_cuda and np.array_equal(h.numpy(), a.numpy())
    p = a.pin_memory().to("cuda", non_blocking=True)
    assert np.array_equal(p.cpu().numpy(), a.numpy())
    try:
        a + g
    except RuntimeError as e:
        assert "device" in str(e), e
    else:
        raise AssertionError("a CPU tensor plus a CUDA tensor did not raise")
    assert (tw.tensor(2.0) * g).is_cuda  # a 0-d CPU tensor meets any device, as in PyTorch


@check
def matmul_precisions() -> str:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 512, 256)), rng.standard_normal((256, 128))
    lines = []
    for dtype, tol in (
        (tw.float64, 1e-12),
        (tw.float32, 1e-4),
        (tw.float16, 3e-2),
        (tw.bfloat16, 1e-1),
    ):
        ours = tw.tensor(a, dtype=dtype, device="cuda") @ tw.tensor(b, dtype=dtype, device="cuda")
        tdt = getattr(torch, str(dtype).split(".")[-1])
        theirs = torch.tensor(a, dtype=tdt, device="cuda") @ torch.tensor(
            b, dtype=tdt, device="cuda"
        )
        assert ours.dtype == dtype
        close(ours, theirs, rtol=tol, atol=tol * 16)
        lines.append(str(dtype))
    tw.backends.cuda.matmul.allow_tf32 = True
    try:
        assert torch.backends.cuda.matmul.allow_tf32
    finally:
        tw.backends.cuda.matmul.allow_tf32 = False
    return ", ".join(lines)


def lm(lib, vocab=97, d=64):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, x):
            n = x.shape[1]
            mask = nn.Transformer.generate_square_subsequent_mask(n, device=x.device)
            return self.head(self.enc(self.emb(x), mask=mask, is_causal=True))

    return LM()


def paired_lm():
    torch.manual_seed(0)
    theirs = lm(torch).cuda()
    ours = lm(tw).cuda()
    ours.load_state_dict({k: tw.tensor(v.cpu().numpy()) for k, v in theirs.state_dict().items()})
    tokens = np.random.default_rng(1).integers(0, 97, (8, 33))
    return ours, theirs, tokens


def train(lib, model, tokens, steps, autocast=None, scaler=None, compile_step=False):
    x = lib.tensor(tokens[:, :-1], device="cuda")
    y = lib.tensor(tokens[:, 1:], device="cuda")
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        if autocast is not None:
            with lib.autocast("cuda", dtype=autocast):
                loss = lib.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        else:
            loss = lib.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    run = lib.compile(step) if compile_step else step
    return [float(run().item()) for _ in range(steps)]


@check
def transformer_float32_matches_torch() -> str:
    ours, theirs, tokens = paired_lm()
    want = train(torch, theirs, tokens, 5)
    got = train(tw, ours, tokens, 5)
    np.testing.assert_allclose(got, want, rtol=2e-4)
    return f"losses {got[0]:.4f} -> {got[-1]:.4f}"


@check
def transformer_bf16_autocast() -> str:
    ours, theirs, tokens = paired_lm()
    want = train(torch, theirs, tokens, 5, autocast=torch.bfloat16)
    got = train(tw, ours, tokens, 5, autocast=tw.bfloat16)
    np.testing.assert_allclose(got, want, rtol=3e-2)
    return f"bf16 losses {got[0]:.4f} -> {got[-1]:.4f} (torch {want[-1]:.4f})"


@check
def transformer_fp16_gradscaler() -> str:
    ours, theirs, tokens = paired_lm()
    want = train(
        torch, theirs, tokens, 5, autocast=torch.float16, scaler=torch.amp.GradScaler("cuda")
    )
    got = train(tw, ours, tokens, 5, autocast=tw.float16, scaler=tw.amp.GradScaler("cuda"))
    np.testing.assert_allclose(got, want, rtol=3e-2)
    return f"fp16 losses {got[0]:.4f} -> {got[-1]:.4f} (torch {want[-1]:.4f})"


@check
def compiled_step_matches_eager() -> str:
    ours, _, tokens = paired_lm()
    eager_model = lm(tw).cuda()
    eager_model.load_state_dict(ours.state_dict())
    eager = train(tw, eager_model, tokens, 6)
    start = time.perf_counter()
    compiled = train(tw, ours, tokens, 6, compile_step=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4)
    return f"compiled = eager over 6 steps ({time.perf_counter() - start:.1f} s with tracing)"


@check
def fused_attention_and_grads() -> None:
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 4, 64, 32)).astype(np.float32) for _ in range(3))
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        tq, tk, tv = (
            torch.tensor(a, device="cuda", dtype=dtype, requires_grad=True) for a in (q, k, v)
        )
        oq, ok_, ov = (
            tw.tensor(a, device="cuda", dtype=getattr(tw, str(dtype)[6:]), requires_grad=True)
            for a in (q, k, v)
        )
        want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
        got = tw.nn.functional.scaled_dot_product_attention(oq, ok_, ov, is_causal=True)
        want.sum().backward()
        got.sum().backward()
        tol = 1e-5 if dtype == torch.float32 else 2e-2
        close(got, want, rtol=tol, atol=tol)
        for a, b in ((oq, tq), (ok_, tk), (ov, tv)):
            close(a.grad, b.grad, rtol=tol * 4, atol=tol * 4)


@check
def save_and_load_from_gpu() -> None:
    model = lm(tw).cuda()
    buffer = io.BytesIO()
    tw.save(model.state_dict(), buffer)
    buffer.seek(0)
    state = tw.load(buffer, map_location="cuda")
    assert all(t.is_cuda for t in state.values())
    with tempfile.TemporaryDirectory() as d:
        tw.save(model.state_dict(), f"{d}/m.pt")
        cpu_state = tw.load(f"{d}/m.pt", map_location="cpu")
        assert not any(t.is_cuda for t in cpu_state.values())


@check
def out_of_memory_is_an_error() -> None:
    try:
        tw.empty(1 << 45, device="cuda")  # 128 TiB of float32
    except tw.cuda.OutOfMemoryError:
        pass
    else:
        raise AssertionError("128 TiB did not raise OutOfMemoryError")
    assert tw.ones(3, device="cuda").sum().item() == 3.0  # and the device still works


@check
def recurrent_layers_in_eval_mode_differentiate() -> None:
    rng = np.random.default_rng(3)
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)
    ours = tw.nn.LSTM(8, 16, num_layers=2, batch_first=True)
    ours.load_state_dict({k: tw.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    ours.cuda().eval()
    x = rng.standard_normal((3, 5, 8)).astype(np.float32)
    h0 = rng.standard_normal((1, 3, 16)).astype(np.float32)
    xs = tw.tensor(x, device="cuda", requires_grad=True)
    hx = tw.tensor(h0, device="cuda").expand(2, 3, 16)  # a broadcast initial state
    out, _ = ours(xs, (hx, hx))
    out.sum().backward()
    # against torch on the GPU: cuDNN's recurrent kernels use TF32 there, as in PyTorch
    # (torch's cuDNN path refuses a broadcast hx, "hx is not contiguous"; ours accepts it,
    # as torch does on the CPU)
    h = torch.tensor(h0, device="cuda").expand(2, 3, 16).contiguous()
    want, _ = theirs.cuda().eval()(torch.tensor(x, device="cuda"), (h, h))
    close(out, want, rtol=1e-5, atol=1e-6)
    assert xs.grad is not None and xs.grad.shape == xs.shape


@check
def data_loader_workers_after_the_gpu_was_used() -> None:
    tw.ones(1, device="cuda").sum().item()  # the parent has initialised CUDA
    data = tw.utils.data.TensorDataset(tw.arange(10.0))
    batches = list(tw.utils.data.DataLoader(data, batch_size=5, num_workers=2))
    assert [b[0].tolist() for b in batches] == [[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 6, 7, 8, 9]]


@check
def half_uniform_draws_stay_below_one() -> str:
    draws = tw.rand(1 << 22, device="cuda", dtype=tw.bfloat16)
    top = float(draws.max())
    assert 0.0 <= float(draws.min()) and top < 1.0, top
    return f"largest draw {top}"


@check
def bfloat16_sort_and_searchsorted_like_torch_cpu() -> str:
    rng = np.random.default_rng(4)
    a = torch.tensor(rng.standard_normal((3, 4, 5)), dtype=torch.bfloat16)
    lines = []
    for dim in range(3):
        cpu = torch.sort(a, dim=dim, stable=True).indices
        gpu = torch.sort(a.cuda(), dim=dim, stable=True).indices.cpu()
        lines.append(f"torch stable sort dim {dim} cpu==cuda: {torch.equal(cpu, gpu)}")
    s = torch.tensor([[1.0, 2.0, 3.0]] * 3, dtype=torch.bfloat16)
    v = torch.tensor([[3.0]] * 3, dtype=torch.bfloat16)
    lines.append(
        f"searchsorted cpu {torch.searchsorted(s, v).flatten().tolist()} "
        f"cuda {torch.searchsorted(s.cuda(), v.cuda()).flatten().tolist()}"
    )
    return "; ".join(lines)


@check
def random_streams_on_gpu() -> None:
    tw.manual_seed(0)
    a = tw.randn(5, device="cuda")
    tw.manual_seed(0)
    b = tw.randn(5, device="cuda")
    assert a.is_cuda and tw.equal(a, b)
    d = tw.nn.functional.dropout(tw.ones(1000, device="cuda"), 0.5)
    assert 350 < int((d == 0).sum()) < 650


def main() -> int:
    failed = 0
    for name, fn in CHECKS:
        start = time.perf_counter()
        try:
            detail = fn()
        except Exception as e:  # report every check, whatever it raised
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {str(e)[:600]}")
            traceback.print_exc(limit=-4, file=sys.stdout)
        else:
            took = time.perf_counter() - start
            print(f"ok   {name} ({took:.1f} s){': ' + detail if detail else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
