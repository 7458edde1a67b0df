"""partial: a backend object without remainder and erf; the kit must report each as one
failing check and run the rest."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "partial", "numpy", "tw_conformance_broken.backends:Partial"
)
