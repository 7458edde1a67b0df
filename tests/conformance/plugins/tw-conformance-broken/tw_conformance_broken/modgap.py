"""modgap: a C-style remainder for signed ints, declared as a glob over all of remainder's
checks; the glob covers the failing variants and lets the passing ones pass."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "modgap", "numpy", "tw_conformance_broken.backends:CStyleRemainder"
)

conformance_gaps = {"primitive/remainder/*": "remainder of signed ints is C's"}
