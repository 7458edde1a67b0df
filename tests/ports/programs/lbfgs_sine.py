"""Sine-wave sequence prediction with two LSTM cells and L-BFGS, after pytorch/examples
``time_sequence_prediction`` (``generate_sine_wave.py`` and ``train.py``), at a small size.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def sine_waves(rng, count, length, period=20):
    """``count`` sine waves of ``length`` samples, randomly shifted: (count, length) float64."""
    x = np.empty((count, length), "int64")
    x[:] = np.array(range(length)) + rng.integers(-4 * period, 4 * period, count).reshape(count, 1)
    return np.sin(x / 1.0 / period).astype("float64")


def main(argv: list[str] | None = None) -> list[float]:
    """Train; return the loss of every closure call and each step's test loss."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2, help="steps to run")
    parser.add_argument("--max-iter", type=int, default=4, help="L-BFGS iterations per step")
    parser.add_argument("--waves", type=int, default=8, help="number of sine waves")
    parser.add_argument("--length", type=int, default=40, help="samples per wave")
    parser.add_argument("--future", type=int, default=20, help="samples to predict")
    parser.add_argument("--lr", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None, help="save the initial state_dict")
    parser.add_argument("--init", type=str, default=None, help="state_dict to start from")
    opt = parser.parse_args(argv)
    # set random seed to 0
    torch.manual_seed(opt.seed)
    rng = np.random.default_rng(opt.seed)
    # load data and make training set
    data = sine_waves(rng, opt.waves, opt.length)
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    # build the model
    seq = Sequence()
    seq.double()
    if opt.init:
        seq.load_state_dict(torch.load(opt.init))
    if opt.save_init:
        torch.save(seq.state_dict(), opt.save_init)
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=opt.lr, max_iter=opt.max_iter)
    losses = []
    # begin to train
    for i in range(opt.steps):
        print("STEP: ", i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print("loss:", loss.item())
            losses.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            future = opt.future
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print("test loss:", loss.item())
            losses.append(loss.item())
            y = pred.detach().numpy()
        # pytorch/examples plots y; its range stands in here
        print("prediction range: [{:.4f}, {:.4f}]".format(y.min(), y.max()))
    return losses


if __name__ == "__main__":
    main()
