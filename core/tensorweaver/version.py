"""The core distribution's version (kept in step with pyproject.toml), and PyTorch's build
facts (``torch.version.cuda``/``hip``): the core is pure Python, built against no GPU
toolkit, so both are None; ``tw.cuda.is_available()`` says whether a backend has CUDA."""

__version__ = "0.3.0"
cuda = None
hip = None
