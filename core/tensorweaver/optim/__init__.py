"""Optimizers and learning-rate schedulers with ``torch.optim``'s API."""

from tensorweaver.optim import lr_scheduler, swa_utils
from tensorweaver.optim.adadelta import Adadelta
from tensorweaver.optim.adafactor import Adafactor
from tensorweaver.optim.adagrad import Adagrad
from tensorweaver.optim.adam import Adam, AdamW
from tensorweaver.optim.adamax import Adamax
from tensorweaver.optim.asgd import ASGD
from tensorweaver.optim.lbfgs import LBFGS
from tensorweaver.optim.muon import Muon
from tensorweaver.optim.nadam import NAdam
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.optim.radam import RAdam
from tensorweaver.optim.rmsprop import RMSprop
from tensorweaver.optim.rprop import Rprop
from tensorweaver.optim.sgd import SGD
from tensorweaver.optim.sparse_adam import SparseAdam

__all__ = [
    "ASGD",
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
]
