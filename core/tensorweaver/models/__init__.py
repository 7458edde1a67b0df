"""A small model zoo: ready-made networks that ``tw.fit`` trains on any backend."""

from tensorweaver.models.gcn import GCN
from tensorweaver.models.mlp import MLP
from tensorweaver.models.resnet import BasicBlock, ResNet
from tensorweaver.models.speech import CTCSpeechModel, greedy_decode
from tensorweaver.models.transformer_lm import TransformerLM, lm_loss
from tensorweaver.models.unet import UNet
from tensorweaver.models.vae import VAE, elbo_loss

__all__ = [
    "GCN",
    "MLP",
    "VAE",
    "BasicBlock",
    "CTCSpeechModel",
    "ResNet",
    "TransformerLM",
    "UNet",
    "elbo_loss",
    "greedy_decode",
    "lm_loss",
]
