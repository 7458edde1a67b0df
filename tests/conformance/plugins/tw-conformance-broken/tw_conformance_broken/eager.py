"""eager: imports its library (torch, through the torch backend) at module import.

Everything else is right: the kit must fail packaging/light-import, naming torch.
"""

from tensorweaver_torch.backend import TorchBackend  # noqa: F401  (the mistake: imports torch)

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "eager", "torch", "tensorweaver_torch.backend:TorchBackend"
)
