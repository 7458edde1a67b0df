"""A character-level LSTM text generator, in the style of the char-RNN tutorials
(karpathy's char-rnn ported to PyTorch, "Generating Names with a Character-Level RNN"):
one-hot-free nn.Embedding input, tied input/output weights, truncated BPTT with detached
hidden states, Adam with custom betas and gradient clipping, then temperature sampling with
torch.multinomial; optionally an adaptive softmax (nn.AdaptiveLogSoftmaxWithLoss) instead of
the tied decoder.

The text is a short made-up paragraph repeated, so no download is needed.
"""

from __future__ import annotations

import argparse
import string

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = (
    "the quick brown fox jumps over the lazy dog. a stitch in time saves nine. "
    "all that glitters is not gold. the early bird catches the worm. "
)


class CharRNN(nn.Module):
    def __init__(
        self,
        n_chars,
        hidden_size,
        n_layers=2,
        dropout=0.0,
        tie_weights=True,
        legacy_new=False,
        adaptive=False,
    ):
        super().__init__()
        self.legacy_new = legacy_new
        self.adaptive = adaptive
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.encoder = nn.Embedding(n_chars, hidden_size)
        self.lstm = nn.LSTM(hidden_size, hidden_size, n_layers, dropout=dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        if adaptive:
            # frequent characters in the head, the rest in two smaller clusters
            self.asm = nn.AdaptiveLogSoftmaxWithLoss(
                hidden_size, n_chars, cutoffs=[8, 16], div_value=2.0
            )
        else:
            self.decoder = nn.Linear(hidden_size, n_chars)
            if tie_weights:
                self.decoder.weight = self.encoder.weight

    def forward(self, x, hidden):
        emb = self.encoder(x)
        output, hidden = self.lstm(emb, hidden)
        output = self.dropout(output)
        if self.adaptive:
            return output, hidden  # features: the adaptive softmax takes them with the targets
        return self.decoder(output), hidden

    def log_probs(self, scores):
        """Log-probabilities of every character from ``forward``'s scores."""
        if self.adaptive:
            return self.asm.log_prob(scores.reshape(-1, scores.size(-1)))
        return F.log_softmax(scores, dim=-1)

    def loss(self, scores, targets, criterion):
        if self.adaptive:
            return self.asm(scores.reshape(-1, scores.size(-1)), targets.reshape(-1)).loss
        return criterion(scores.reshape(-1, scores.size(-1)), targets.reshape(-1))

    def init_hidden(self, batch_size):
        weight = next(self.parameters()).data
        if self.legacy_new:
            # the pre-0.4 spelling many char-rnn ports still use
            return (
                weight.new(self.n_layers, batch_size, self.hidden_size).zero_(),
                weight.new(self.n_layers, batch_size, self.hidden_size).zero_(),
            )
        return (
            weight.new_zeros(self.n_layers, batch_size, self.hidden_size),
            torch.zeros(self.n_layers, batch_size, self.hidden_size),
        )


def char_tensor(text, char_to_ix):
    return torch.tensor([char_to_ix[c] for c in text], dtype=torch.long)


def batches(data, batch_size, seq_len):
    """(batch, seq_len) inputs and next-character targets, walking the stream in order."""
    n = (data.numel() - 1) // (batch_size * seq_len) * (batch_size * seq_len)
    x = data[:n].view(batch_size, -1)
    y = data[1 : n + 1].view(batch_size, -1)
    for i in range(0, x.size(1), seq_len):
        yield x[:, i : i + seq_len], y[:, i : i + seq_len]


def sample(model, char_to_ix, ix_to_char, prime_str, predict_len, temperature):
    """Generates text after ``prime_str``; the text and its mean negative log-likelihood."""
    model.eval()
    hidden = model.init_hidden(1)
    prime = char_tensor(prime_str, char_to_ix).unsqueeze(0)
    with torch.no_grad():
        # Use priming string to "build up" hidden state
        _, hidden = model(prime[:, :-1], hidden)
        inp = prime[:, -1:]
        predicted = prime_str
        nll = 0.0
        for _ in range(predict_len):
            scores, hidden = model(inp, hidden)
            log_probs = model.log_probs(scores).view(-1)
            # Sample from the network as a multinomial distribution
            output_dist = log_probs.div(temperature).exp()
            top_i = torch.multinomial(output_dist, 1)[0]
            nll -= log_probs[top_i].item()
            predicted += ix_to_char[top_i.item()]
            inp = top_i.view(1, 1)
    model.train()
    return predicted, nll / predict_len


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's loss, then the sampled text's mean NLL."""
    parser = argparse.ArgumentParser(description="char-rnn")
    parser.add_argument("--hidden-size", type=int, default=32)
    parser.add_argument("--n-layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--no-tie", action="store_true")
    parser.add_argument("--legacy-new", action="store_true", help="init_hidden with Tensor.new")
    parser.add_argument("--adaptive", action="store_true", help="nn.AdaptiveLogSoftmaxWithLoss")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--predict-len", type=int, default=20)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    chars = sorted(set(TEXT) | set(string.ascii_lowercase))
    char_to_ix = {c: i for i, c in enumerate(chars)}
    ix_to_char = {i: c for i, c in enumerate(chars)}
    data = char_tensor(TEXT * 3, char_to_ix)

    model = CharRNN(
        len(chars),
        args.hidden_size,
        args.n_layers,
        args.dropout,
        not args.no_tie,
        args.legacy_new,
        args.adaptive,
    )
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.8, 0.99), eps=1e-7)
    criterion = nn.CrossEntropyLoss()

    losses = []
    for epoch in range(1, args.epochs + 1):
        hidden = model.init_hidden(args.batch_size)
        for x, y in batches(data, args.batch_size, args.seq_len):
            # Detach the hidden state so backpropagation stops at the batch boundary
            hidden = tuple(h.detach() for h in hidden)
            model.zero_grad()
            scores, hidden = model(x, hidden)
            loss = model.loss(scores, y, criterion)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch} | last loss {losses[-1]:.4f} | ppl {torch.exp(loss).item():.2f}")

    text, nll = sample(model, char_to_ix, ix_to_char, "the ", args.predict_len, args.temperature)
    print(repr(text))
    return [*losses, nll]


if __name__ == "__main__":
    main()
