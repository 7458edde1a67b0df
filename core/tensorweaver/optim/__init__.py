"""Optimizers and learning-rate schedulers with ``torch.optim``'s API."""

from tensorweaver.optim import lr_scheduler
from tensorweaver.optim.adagrad import Adagrad
from tensorweaver.optim.adam import Adam, AdamW
from tensorweaver.optim.nadam import NAdam
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.optim.radam import RAdam
from tensorweaver.optim.rmsprop import RMSprop
from tensorweaver.optim.sgd import SGD

__all__ = [
    "SGD",
    "Adagrad",
    "Adam",
    "AdamW",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "lr_scheduler",
]
