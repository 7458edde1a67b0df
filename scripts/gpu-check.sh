#!/usr/bin/env bash
# The checks that need a CUDA GPU. CI has none, so a session that is lent a GPU machine runs
# them there; nothing else depends on this script.
#
#   bash scripts/gpu-check.sh prepare    # here: build the wheels into dist/ (with .venv)
#   bash scripts/gpu-check.sh run [SECS [TEST PATHS...]]  # there, with dist/ carried; logs in $OUT
#   (TW_CHECK_ONLY="--only PATTERN ..." narrows tw check)
#
# "run" uses the GPU machine's own python3 and its packages (its torch, NumPy, SciPy, pytest,
# pytest-xdist; it cannot reach a package index): the wheels go into /tmp/site without their
# dependencies. Then, each step bounded so that the whole stays inside one call:
#   1. the machine, tw devices and tw doctor;
#   2. scripts/gpu_smoke.py (what a CUDA user does, against raw PyTorch on the GPU) and the
#      digits classifier on torch:cuda;
#   3. the conformance kit on torch:cuda (tw check), every case against NumPy in float64;
#   4. the suite's torch:cpu cases entered on torch:cuda (TENSORWEAVER_TEST_TORCH_DEVICE),
#      streamed one line per test, then its failures run again on torch:cpu, so that a failure
#      of the GPU alone is told apart from one of this machine's other package versions.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
prepare)
    bash scripts/build-dists.sh
    ls dist/*.whl
    ;;
run)
    budget=${2:-200} # seconds for the suite's step; the others are bounded below
    out=${OUT:-/tmp/gpu-check}
    mkdir -p "$out"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
        dist/*.whl
    export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
    export OMP_WAIT_POLICY=PASSIVE
    {
        nvidia-smi -L
        python3 -c 'import sys, numpy, torch; print(sys.version); print("numpy", numpy.__version__,
"torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
        tw --version
        tw devices
        tw doctor || true
    } 2>&1 | tee "$out/machine.log"
    timeout 90 python3 scripts/gpu_smoke.py 2>&1 | tee "$out/smoke.log" || true
    timeout 45 python3 examples/digits.py --device torch:cuda --epochs 5 2>&1 | tail -n 3 || true
    timeout 100 tw check --backend torch:cuda --jobs 12 ${TW_CHECK_ONLY:-} >"$out/check.log" 2>&1 ||
        true
    tail -n 6 "$out/check.log"
    grep -E "FAIL|ERROR" "$out/check.log" | head -n 40 || true
    skip=(--ignore=tests/docs --ignore=tests/plugins --ignore=tests/conformance
        --ignore=tests/cli)
    paths=("${@:3}")
    [ ${#paths[@]} -gt 0 ] || paths=(tests)
    TENSORWEAVER_TEST_TORCH_DEVICE=torch:cuda timeout -s INT "$budget" \
        python3 -m pytest -v -n 12 -p no:randomly "${skip[@]}" "${paths[@]}" \
        >"$out/suite-cuda.log" 2>&1 || true
    grep -E "^\[gw[0-9]+\] \[ *[0-9]+%\] (FAILED|ERROR)|^(FAILED|ERROR) " "$out/suite-cuda.log" |
        sed -E 's/^\[gw[0-9]+\] \[ *[0-9]+%\] //; s/^(FAILED|ERROR) //; s/ - .*//' |
        sort -u >"$out/failed-cuda.txt" || true
    tail -n 3 "$out/suite-cuda.log"
    echo "failed on cuda: $(wc -l <"$out/failed-cuda.txt")"
    if [ -s "$out/failed-cuda.txt" ]; then
        timeout 60 python3 -m pytest -q -n 12 -p no:randomly $(head -n 400 "$out/failed-cuda.txt") \
            >"$out/suite-cpu-rerun.log" 2>&1 || true
        tail -n 3 "$out/suite-cpu-rerun.log"
    fi
    ;;
*)
    echo "usage: $0 prepare | run [SECONDS]" >&2
    exit 2
    ;;
esac
