"""What a failing line says: the operands at the wrong element of an elementwise result;
and for a composite, whether the device's fused kernel or the core's decomposition ran."""

from __future__ import annotations


def test_a_wrong_element_comes_with_its_operands(broken):
    done = broken.tw("check", "--backend", "modgap", "--only", "primitive/remainder/int8")
    assert done.returncode == 1
    line = next(line for line in done.stdout.splitlines() if "  FAIL  " in line)
    # C's remainder: -5 % 2 is -1 there, 1 in PyTorch and Python
    assert line.endswith("remainder: at (0, 0) got -1, expected 1 (operands: -5, 2)")


def _rows(env, backend, *only):
    args = [a for o in only for a in ("--only", o)]
    done = env.tw("check", "--backend", backend, *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {line.split()[1]: line.split()[2:] for line in done.stdout.splitlines()[:-1]}


def test_each_composite_line_says_which_path_ran(plain):
    only = ("composite/softmax/float64", "composite/avg_pool/float64", "primitive/exp/float64")
    torch, numpy = _rows(plain, "torch:cpu", *only), _rows(plain, "numpy", *only)
    # difference, path, verdict: both fuse softmax, only torch fuses avg_pool
    assert torch["composite/softmax/float64"][1:] == ["fused", "ok"]
    assert numpy["composite/softmax/float64"][1:] == ["fused", "ok"]
    assert torch["composite/avg_pool/float64"][1:] == ["fused", "ok"]
    assert numpy["composite/avg_pool/float64"][1:] == ["decomposed", "ok"]
    assert numpy["primitive/exp/float64"][1:] == ["ok"]  # not a composite: no path
