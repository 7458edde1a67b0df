"""Deep convolutional GAN, after pytorch/examples ``dcgan/main.py``, on 16x16 images.

The images are a synthetic stand-in for a small colour dataset: smooth random blobs in
[-1, 1], so the run needs no download and the discriminator has structure to learn.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.optim as optim
import torch.utils.data


def weights_init(m):
    """DCGAN's initialization: N(0, 0.02) convolutions, N(1, 0.02) batch-norm scales."""
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        m.bias.data.fill_(0)


class Generator(nn.Module):
    def __init__(self, ngpu, nz, ngf, nc):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


class Discriminator(nn.Module):
    def __init__(self, ngpu, ndf, nc):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)

        return output.view(-1, 1).squeeze(1)


def synthetic_images(rng, count, nc, size):
    """``count`` images (N, nc, size, size) float32 in [-1, 1]: one Gaussian blob each."""
    grid = np.linspace(-1.0, 1.0, size)
    yy, xx = np.meshgrid(grid, grid, indexing="ij")
    centers = rng.uniform(-0.5, 0.5, size=(count, 2, 1, 1))
    colours = rng.uniform(0.2, 1.0, size=(count, nc, 1, 1))
    blob = np.exp(-((xx - centers[:, 0]) ** 2 + (yy - centers[:, 1]) ** 2) / 0.1)
    return (2.0 * colours * blob[:, None] - 1.0).astype(np.float32)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; return the discriminator's and the generator's loss of every step, in turn."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16, help="input batch size")
    parser.add_argument("--image-size", type=int, default=16, help="height / width of images")
    parser.add_argument("--nz", type=int, default=16, help="size of the latent z vector")
    parser.add_argument("--ngf", type=int, default=8)
    parser.add_argument("--ndf", type=int, default=8)
    parser.add_argument("--nc", type=int, default=3, help="image channels")
    parser.add_argument("--steps", type=int, default=6, help="batches per epoch")
    parser.add_argument("--niter", type=int, default=2, help="number of epochs to train for")
    parser.add_argument("--lr", type=float, default=0.0002, help="learning rate")
    parser.add_argument("--beta1", type=float, default=0.5, help="beta1 for adam")
    parser.add_argument("--cuda", action="store_true", default=False, help="enables cuda")
    parser.add_argument("--mps", action="store_true", default=False, help="enables macOS GPU")
    parser.add_argument("--ngpu", type=int, default=1, help="number of GPUs to use")
    parser.add_argument("--outf", default="", help="folder for model checkpoints")
    parser.add_argument("--netG", default="", help="path to netG (to continue training)")
    parser.add_argument("--netD", default="", help="path to netD (to continue training)")
    parser.add_argument("--save-init", default=None, help="save both initial state dicts")
    parser.add_argument("--init", default=None, help="{'netG': ..., 'netD': ...} state dicts")
    parser.add_argument("--seed", type=int, default=1, help="manual seed")
    opt = parser.parse_args(argv)
    print(opt)

    print("Random Seed: ", opt.seed)
    torch.manual_seed(opt.seed)
    rng = np.random.default_rng(opt.seed)

    cudnn.benchmark = True

    if torch.cuda.is_available() and not opt.cuda:
        print("WARNING: You have a CUDA device, so you should probably run with --cuda")
    if torch.backends.mps.is_available() and not opt.mps:
        print("WARNING: You have mps device, to enable macOS GPU run with --mps")

    use_mps = opt.mps and torch.backends.mps.is_available()
    if opt.cuda:
        device = torch.device("cuda:0")
    elif use_mps:
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    images = synthetic_images(rng, opt.steps * opt.batch_size, opt.nc, opt.image_size)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images))
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batch_size, shuffle=True)

    ngpu = int(opt.ngpu)
    nz, ngf, ndf, nc = opt.nz, opt.ngf, opt.ndf, opt.nc

    netG = Generator(ngpu, nz, ngf, nc).to(device)
    netG.apply(weights_init)
    if opt.netG != "":
        netG.load_state_dict(torch.load(opt.netG))
    print(netG)

    netD = Discriminator(ngpu, ndf, nc).to(device)
    netD.apply(weights_init)
    if opt.netD != "":
        netD.load_state_dict(torch.load(opt.netD))
    print(netD)

    if opt.init:
        state = torch.load(opt.init)
        netG.load_state_dict(state["netG"])
        netD.load_state_dict(state["netD"])
    if opt.save_init:
        torch.save({"netG": netG.state_dict(), "netD": netD.state_dict()}, opt.save_init)

    criterion = nn.BCELoss()

    fixed_noise = torch.randn(opt.batch_size, nz, 1, 1, device=device)
    real_label = 1
    fake_label = 0

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    losses = []
    for epoch in range(opt.niter):
        for i, data in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data[0].to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            noise = torch.randn(batch_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            print(
                "[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f"
                % (
                    epoch,
                    opt.niter,
                    i,
                    len(dataloader),
                    errD.item(),
                    errG.item(),
                    D_x,
                    D_G_z1,
                    D_G_z2,
                )
            )
            losses += [errD.item(), errG.item()]

        with torch.no_grad():
            fake = netG(fixed_noise)
        print("fixed-noise samples: mean %.4f std %.4f" % (fake.mean().item(), fake.std().item()))

        # do checkpointing
        if opt.outf:
            torch.save(netG.state_dict(), "%s/netG_epoch_%d.pth" % (opt.outf, epoch))
            torch.save(netD.state_dict(), "%s/netD_epoch_%d.pth" % (opt.outf, epoch))

    return losses


if __name__ == "__main__":
    main()
