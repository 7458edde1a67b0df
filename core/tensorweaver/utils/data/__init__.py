"""Datasets, samplers and loaders with PyTorch's ``torch.utils.data`` names and behaviour.

``dataset`` (map-style and iterable datasets, ``random_split``), ``sampler`` (index orders
and batches), ``collate`` (merging samples), ``dataloader`` (``DataLoader``), ``worker``
(what runs in a worker process, ``get_worker_info``); ``fetch``, ``transport`` and
``multiprocessing_iter`` are the loader's inner parts.
"""

from tensorweaver.utils.data.collate import default_collate, default_convert
from tensorweaver.utils.data.dataloader import DataLoader
from tensorweaver.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tensorweaver.utils.data.distributed import DistributedSampler
from tensorweaver.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from tensorweaver.utils.data.worker import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
