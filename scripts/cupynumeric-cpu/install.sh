#!/usr/bin/env bash
# Make the PyPI (CUDA) build of cuPyNumeric/Legate run on a machine WITHOUT an NVIDIA GPU.
#
#   scripts/cupynumeric-cpu/install.sh PYTHON
#
# PYTHON is the interpreter whose site-packages already holds nvidia-cupynumeric (this script
# does not install it). Steps, each skipped when already done, so it is safe to rerun:
#   1. refuse, doing nothing, where a real NVIDIA driver exists (the stand-in would hide the GPU);
#   2. compile libcuda_standin.c into <site-packages>/legate/lib64/libcuda.so.1 (that folder is
#      on the RPATH of legate's libraries, so no LD_LIBRARY_PATH is needed);
#   3. make libcudart.so.13 resolvable: the system's copy if the loader finds one, otherwise
#      pip's nvidia-cuda-runtime 13, linked into the same folder;
#   4. check that `import cupynumeric` works with Legate's CPU configuration.
set -euo pipefail

# The CPU configuration: Legate's auto-configuration fails without GPUs, `--gpus 0` needs a
# utility core, and the wheels have no OpenMP. TensorWeaver's plugin sets the same by default
# (with a larger --sysmem).
CPU_CONFIG="--cpus 1 --gpus 0 --utility 1 --sysmem 2000 --logging gpu=6"
MARKER="tensorweaver-libcuda-standin"

say() { printf 'cupynumeric-cpu: %s\n' "$*"; }
die() { say "error: $*" >&2; exit 1; }

[[ $# -eq 1 ]] || die "usage: $0 PYTHON"
PYTHON=$1
command -v "$PYTHON" >/dev/null || die "no such interpreter: $PYTHON"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# find_spec locates legate without importing it (importing would fail right now).
LIB64=$("$PYTHON" -c '
import importlib.util, os
spec = importlib.util.find_spec("legate")
print(os.path.join(spec.submodule_search_locations[0], "lib64") if spec else "")
')
TARGET=$LIB64/libcuda.so.1

# The loader's cache, read once: `ldconfig -p | grep -q` under pipefail can fail on SIGPIPE.
LDCACHE=$(ldconfig -p 2>/dev/null || true)

# 1. A real driver, or a GPU device node, or nvidia-smi: leave everything as it is.
if grep -q 'libcuda.so.1 ' <<<"$LDCACHE" || [[ -e /dev/nvidia0 ]] ||
    command -v nvidia-smi >/dev/null; then
    say "an NVIDIA driver or GPU is present; not installing the CPU stand-in (nothing done)."
    if [[ -n $LIB64 && -e $TARGET ]] && grep -q "$MARKER" "$TARGET"; then
        say "WARNING: a stand-in from an earlier run hides the real driver; remove it with:"
        say "  rm '$TARGET'"
    fi
    exit 0
fi
[[ -n $LIB64 && -d $LIB64 ]] ||
    die "legate is not installed for $PYTHON; first run: $PYTHON -m pip install nvidia-cupynumeric"

# 2. Compile into a temporary file and replace the installed one only when it differs.
command -v gcc >/dev/null || die "gcc is needed to build the stand-in (apt-get install gcc)"
if [[ -e $TARGET ]] && ! grep -q "$MARKER" "$TARGET"; then
    die "$TARGET exists and is not TensorWeaver's stand-in; not touching it"
fi
TMP=$(mktemp "$LIB64/.libcuda.so.1.XXXXXX")
trap 'rm -f "$TMP"' EXIT
gcc -O2 -Wall -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$TMP" "$HERE/libcuda_standin.c" -ldl
if [[ -e $TARGET ]] && cmp -s "$TMP" "$TARGET"; then
    say "stand-in already installed: $TARGET"
else
    chmod 755 "$TMP"
    mv -f "$TMP" "$TARGET"
    say "installed the stand-in driver: $TARGET"
fi

# 3. libcudart.so.13: ldconfig's cache (this project's image: /usr/local/cuda-13.0/lib), or a
#    copy already beside the stand-in; else the pip wheel (its nvidia/cu13/lib is not on the
#    RPATH of the library that needs it, so link it into legate/lib64, which is).
if grep -q 'libcudart.so.13 ' <<<"$LDCACHE" || [[ -e $LIB64/libcudart.so.13 ]]; then
    say "libcudart.so.13 resolves"
else
    say "libcudart.so.13 not found; installing nvidia-cuda-runtime 13 with pip"
    "$PYTHON" -m pip install --quiet 'nvidia-cuda-runtime==13.*'
    CUDART=$("$PYTHON" -c '
import importlib.util, os
spec = importlib.util.find_spec("nvidia")
for root in (spec.submodule_search_locations if spec else []):
    path = os.path.join(root, "cu13", "lib", "libcudart.so.13")
    if os.path.exists(path):
        print(path)
        break
')
    [[ -n $CUDART ]] || die "nvidia-cuda-runtime installed but libcudart.so.13 not found"
    ln -sf "$CUDART" "$LIB64/libcudart.so.13"
    say "linked $CUDART into $LIB64"
fi

# 4. The proof: cuPyNumeric starts on the CPU and computes.
if ! OUT=$(env LEGATE_AUTO_CONFIG=0 LEGATE_CONFIG="$CPU_CONFIG" "$PYTHON" -c '
import cupynumeric as np
assert float(np.arange(4.0).sum()) == 6.0
print("cupynumeric", np.__version__)
' 2>&1); then
    printf '%s\n' "$OUT" >&2
    die "import cupynumeric failed with the stand-in in place (output above)"
fi
say "ok: $(printf '%s\n' "$OUT" | tail -n 1) runs on the CPU with" \
    "LEGATE_AUTO_CONFIG=0 LEGATE_CONFIG=\"$CPU_CONFIG\""
