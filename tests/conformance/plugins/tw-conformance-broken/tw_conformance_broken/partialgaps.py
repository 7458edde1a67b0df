"""partialgaps: partial's backend, declaring its two missing primitives as gaps."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "partialgaps", "numpy", "tw_conformance_broken.backends:Partial"
)

conformance_gaps = {
    "primitive/remainder/*": "remainder is not written yet",
    "primitive/erf/*": "erf is not written yet",
}
