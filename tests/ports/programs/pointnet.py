"""PointNet classification, as in the widely copied ``pointnet.pytorch`` model: a T-Net that
predicts a k x k transform (shared ``Conv1d`` MLP, ``torch.max`` over points, fully connected
layers, the identity added through ``torch.eye(k).view(1, k*k).repeat(batchsize, 1)``),
``torch.bmm`` of the points with it, the feature-transform regularizer ``||I - A A^T||``,
``F.log_softmax`` with ``F.nll_loss``, Adam with StepLR, and ``pred.data.max(1)[1]``
accuracy.

The point clouds are synthetic: noisy samples of a sphere, a cube surface and a cylinder,
randomly rotated about the vertical axis.

``--double`` runs it in float64: the convolutions' and fc1's biases feed BatchNorm, so their
exact gradient is zero and Adam scales the float32 rounding left in it (a different noise on
each library) up to lr-sized steps; in float32 the losses part by ~2e-4 within 16 steps.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class STNkd(nn.Module):
    def __init__(self, k=64, width=16):
        super(STNkd, self).__init__()
        self.conv1 = torch.nn.Conv1d(k, width, 1)
        self.conv2 = torch.nn.Conv1d(width, 2 * width, 1)
        self.fc1 = nn.Linear(2 * width, width)
        self.fc2 = nn.Linear(width, k * k)
        self.relu = nn.ReLU()
        self.bn1 = nn.BatchNorm1d(width)
        self.bn2 = nn.BatchNorm1d(2 * width)
        self.bn3 = nn.BatchNorm1d(width)
        self.k = k

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, self.bn2.num_features)
        x = F.relu(self.bn3(self.fc1(x)))
        x = self.fc2(x)
        iden = torch.from_numpy(np.eye(self.k).flatten()).to(x.dtype)
        iden = iden.view(1, self.k * self.k).repeat(batchsize, 1)
        if x.is_cuda:
            iden = iden.cuda()
        x = x + iden
        x = x.view(-1, self.k, self.k)
        return x


class PointNetfeat(nn.Module):
    def __init__(self, feature_transform=False, width=16):
        super(PointNetfeat, self).__init__()
        self.stn = STNkd(k=3, width=width)
        self.conv1 = torch.nn.Conv1d(3, width, 1)
        self.conv2 = torch.nn.Conv1d(width, 2 * width, 1)
        self.bn1 = nn.BatchNorm1d(width)
        self.bn2 = nn.BatchNorm1d(2 * width)
        self.feature_transform = feature_transform
        if self.feature_transform:
            self.fstn = STNkd(k=width, width=width)
        self.out_features = 2 * width

    def forward(self, x):
        n_pts = x.size()[2]
        trans = self.stn(x)
        x = x.transpose(2, 1)
        x = torch.bmm(x, trans)
        x = x.transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))

        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = x.transpose(2, 1)
            x = torch.bmm(x, trans_feat)
            x = x.transpose(2, 1)
        else:
            trans_feat = None

        x = self.bn2(self.conv2(x))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, self.out_features)
        assert n_pts > 0
        return x, trans, trans_feat


class PointNetCls(nn.Module):
    def __init__(self, k=2, feature_transform=False, width=16):
        super(PointNetCls, self).__init__()
        self.feature_transform = feature_transform
        self.feat = PointNetfeat(feature_transform=feature_transform, width=width)
        self.fc1 = nn.Linear(2 * width, width)
        self.fc2 = nn.Linear(width, k)
        self.dropout = nn.Dropout(p=0.3)
        self.bn1 = nn.BatchNorm1d(width)
        self.relu = nn.ReLU()

    def forward(self, x):
        x, trans, trans_feat = self.feat(x)
        x = F.relu(self.bn1(self.dropout(self.fc1(x))))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1), trans, trans_feat


def feature_transform_regularizer(trans):
    d = trans.size()[1]
    I = torch.eye(d)[None, :, :]  # noqa: E741
    if trans.is_cuda:
        I = I.cuda()  # noqa: E741
    loss = torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2, 1)) - I, dim=(1, 2)))
    return loss


def make_clouds(rng, n, n_points):
    labels = rng.integers(0, 3, size=n)
    clouds = []
    for label in labels:
        u = rng.normal(size=(n_points, 3))
        if label == 0:  # sphere
            pts = u / np.linalg.norm(u, axis=1, keepdims=True)
        elif label == 1:  # cube surface
            pts = u / np.abs(u).max(axis=1, keepdims=True)
        else:  # cylinder
            angle = rng.uniform(0, 2 * np.pi, n_points)
            pts = np.stack([np.cos(angle), np.sin(angle), rng.uniform(-1, 1, n_points)], 1)
        theta = rng.uniform(0, 2 * np.pi)
        rot = np.array([[np.cos(theta), -np.sin(theta), 0], [np.sin(theta), np.cos(theta), 0],
                        [0, 0, 1]])  # fmt: skip
        clouds.append(pts @ rot.T + 0.02 * rng.normal(size=pts.shape))
    points = torch.from_numpy(np.stack(clouds)).to(torch.get_default_dtype())
    return points, torch.from_numpy(labels)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every batch's loss and accuracy, then the test loss and accuracy."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--batchSize", type=int, default=8, help="input batch size")
    parser.add_argument("--num_points", type=int, default=32, help="points per cloud")
    parser.add_argument("--nepoch", type=int, default=2, help="number of epochs to train for")
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--feature_transform", action="store_true", help="use feature transform")
    parser.add_argument("--double", action="store_true", help="torch.float64 as default dtype")
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    opt = parser.parse_args(argv)
    print(opt)
    previous_dtype = torch.get_default_dtype()
    if opt.double:
        torch.set_default_dtype(torch.float64)
    try:
        return train(opt)
    finally:
        torch.set_default_dtype(previous_dtype)


def train(opt):

    torch.manual_seed(opt.seed)
    rng = np.random.default_rng(opt.seed)
    train_x, train_y = make_clouds(rng, 32, opt.num_points)
    test_x, test_y = make_clouds(rng, 16, opt.num_points)
    dataset = torch.utils.data.TensorDataset(train_x, train_y)
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)

    classifier = PointNetCls(k=3, feature_transform=opt.feature_transform, width=opt.width)
    if opt.save_init:
        torch.save(classifier.state_dict(), opt.save_init)
    if opt.init:
        classifier.load_state_dict(torch.load(opt.init))
    optimizer = optim.Adam(classifier.parameters(), lr=0.001, betas=(0.9, 0.999))
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    losses = []
    for epoch in range(opt.nepoch):
        for i, data in enumerate(dataloader, 0):
            points, target = data
            points = points.transpose(2, 1)
            optimizer.zero_grad()
            classifier = classifier.train()
            pred, trans, trans_feat = classifier(points)
            loss = F.nll_loss(pred, target)
            if opt.feature_transform:
                loss += feature_transform_regularizer(trans_feat) * 0.001
            loss.backward()
            optimizer.step()
            pred_choice = pred.data.max(1)[1]
            correct = pred_choice.eq(target.data).cpu().sum()
            print("[%d: %d] train loss: %f accuracy: %f"
                  % (epoch, i, loss.item(), correct.item() / float(opt.batchSize)))  # fmt: skip
            losses += [loss.item(), correct.item() / float(opt.batchSize)]
        scheduler.step()

    classifier = classifier.eval()
    with torch.no_grad():
        pred, _, _ = classifier(test_x.transpose(2, 1))
        loss = F.nll_loss(pred, test_y)
        correct = pred.data.max(1)[1].eq(test_y).sum().item()
    losses += [loss.item(), correct / len(test_y)]
    return losses


if __name__ == "__main__":
    main()
