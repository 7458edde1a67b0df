"""stalegap: modgap's backend with a glob gap none of whose checks fails (the float
variants), which the kit must call stale, and an exact gap on a passing check."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "stalegap", "numpy", "tw_conformance_broken.backends:CStyleRemainder"
)

conformance_gaps = {
    "primitive/remainder/int*": "remainder of signed ints is C's",
    "primitive/remainder/float*": "feared wrong, but right",
    "primitive/remainder/uint8": "feared wrong, but right",
}
