"""withgaps: fails two checks and declares both, so the kit passes it with gaps, not as
conformant."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "withgaps", "numpy", "tw_conformance_broken.backends:WithGap"
)

conformance_gaps = {"primitive/nonzero/0-d*": "nonzero of a 0-d array is not implemented"}
