"""badgrad: a wrong gradient through a fused override; the kit must name fused_softmax_backward."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "badgrad", "numpy", "tw_conformance_broken.backends:WrongGradient"
)
