"""Word-level language modeling with an RNN or a Transformer, after pytorch/examples
``word_language_model`` (its ``main.py``, ``model.py`` and ``generate.py``).

A synthetic corpus drawn from a random Markov chain stands in for Wikitext-2. The default
path trains on the batchified token stream with truncated backpropagation through time; the
``--packed`` path trains on variable-length sentences with packed sequences instead. The best
model is saved whole and loaded back for the test, and ``--words`` then samples from it.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD = 0


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(
        self,
        rnn_type: str,
        ntoken: int,
        ninp: int,
        nhid: int,
        nlayers: int,
        dropout: float = 0.5,
        tie_weights: bool = False,
    ) -> None:
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            except KeyError as e:
                raise ValueError(
                    "--model must be one of ['LSTM', 'GRU', 'RNN_TANH', 'RNN_RELU']"
                ) from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        # "Using the Output Embedding to Improve Language Models" (Press & Wolf, 2016)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight

        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self) -> None:
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden, lengths=None):
        emb = self.drop(self.encoder(input))
        if lengths is None:
            output, hidden = self.rnn(emb, hidden)
        else:
            packed = pack_padded_sequence(emb, lengths, enforce_sorted=False)
            output, hidden = self.rnn(packed, hidden)
            output, _ = pad_packed_sequence(output, total_length=input.size(0))
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (
                weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid),
            )
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


class PositionalEncoding(nn.Module):
    """Adds sine and cosine position encodings to the (seq_len, batch, d_model) embeddings."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    """Container module with an encoder, a causal Transformer encoder, and a decoder."""

    def __init__(
        self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int, dropout: float = 0.5
    ) -> None:
        super().__init__(
            d_model=ninp,
            nhead=nhead,
            dim_feedforward=nhid,
            num_encoder_layers=nlayers,
            dropout=dropout,
        )
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def _generate_square_subsequent_mask(self, sz: int):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self) -> None:
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask: bool = True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


class Corpus:
    """Train/valid/test token streams and sentences from one random bigram language."""

    def __init__(self, ntokens: int, ntrain: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        # Each word prefers a handful of successors, so the model has something to learn.
        logits = rng.normal(0.0, 2.0, size=(ntokens, ntokens))
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        self.ntokens = ntokens
        self.train = self._stream(rng, probs, ntrain)
        self.valid = self._stream(rng, probs, ntrain // 4)
        self.test = self._stream(rng, probs, ntrain // 4)
        self.sentences = [
            self._stream(rng, probs, int(rng.integers(3, 13))).numpy() for _ in range(64)
        ]

    @staticmethod
    def _stream(rng: np.random.Generator, probs: np.ndarray, n: int) -> torch.Tensor:
        # Token 0 is reserved for padding in the packed path.
        ids = np.empty(n, dtype=np.int64)
        ids[0] = rng.integers(1, probs.shape[0])
        for k in range(1, n):
            row = probs[ids[k - 1], 1:]
            ids[k] = 1 + rng.choice(probs.shape[0] - 1, p=row / row.sum())
        return torch.from_numpy(ids)


def batchify(data: torch.Tensor, bsz: int) -> torch.Tensor:
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    return data.view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source: torch.Tensor, i: int, bptt: int):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def pad_sentences(sentences: list[np.ndarray]):
    """Inputs (T, B), next-word targets (T*B,) padded with PAD, and the input lengths."""
    lengths = torch.tensor([len(s) - 1 for s in sentences])
    inputs = torch.full((int(lengths.max()), len(sentences)), PAD, dtype=torch.long)
    targets = torch.full_like(inputs, PAD)
    for b, s in enumerate(sentences):
        inputs[: len(s) - 1, b] = torch.from_numpy(s[:-1])
        targets[: len(s) - 1, b] = torch.from_numpy(s[1:])
    return inputs, targets.view(-1), lengths


def sgd_step(model: nn.Module, lr: float, clip: float) -> None:
    # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)


def train(model, train_data, criterion, args, lr: float, epoch: int) -> list[float]:
    # Turn on training mode which enables dropout.
    model.train()
    losses = []
    total_loss = 0.0
    start_time = time.time()
    if args.model != "Transformer":
        hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        if batch == args.steps:
            break
        data, targets = get_batch(train_data, i, args.bptt)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        # If we didn't, the model would try backpropagating all the way to start of the dataset.
        model.zero_grad()
        if args.model == "Transformer":
            output = model(data)
            output = output.view(-1, args.ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        sgd_step(model, lr, args.clip)

        losses.append(loss.item())
        total_loss += loss.item()
        if (batch + 1) % args.log_interval == 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print(
                f"| epoch {epoch:3d} | {batch + 1:5d} batches | lr {lr:02.2f} | "
                f"ms/batch {elapsed * 1000 / args.log_interval:5.2f} | "
                f"loss {cur_loss:5.2f} | ppl {math.exp(cur_loss):8.2f}"
            )
            total_loss = 0.0
            start_time = time.time()
    return losses


def train_packed(model, sentences, criterion, args, lr: float) -> list[float]:
    model.train()
    losses = []
    for step in range(args.steps):
        start = (step * args.batch_size) % len(sentences)
        inputs, targets, lengths = pad_sentences(sentences[start : start + args.batch_size])
        model.zero_grad()
        output, _ = model(inputs, model.init_hidden(inputs.size(1)), lengths)
        loss = criterion(output, targets)
        loss.backward()
        sgd_step(model, lr, args.clip)
        losses.append(loss.item())
        print(f"| packed step {step + 1:3d} | loss {loss.item():5.2f}")
    return losses


def evaluate(model, data_source, criterion, args) -> float:
    # Turn on evaluation mode which disables dropout.
    model.eval()
    total_loss = 0.0
    if args.model != "Transformer":
        hidden = model.init_hidden(args.eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i, args.bptt)
            if args.model == "Transformer":
                output = model(data)
                output = output.view(-1, args.ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def generate(model, args) -> float:
    """Samples ``args.words`` words from the model; their mean negative log-likelihood."""
    model.eval()
    is_transformer_model = getattr(model, "model_type", None) == "Transformer"
    if not is_transformer_model:
        hidden = model.init_hidden(1)
    input = torch.randint(args.ntokens, (1, 1), dtype=torch.long)
    words, total_nll = [], 0.0
    with torch.no_grad():  # no tracking history
        for _ in range(args.words):
            if is_transformer_model:
                output = model(input, False)
                log_probs = output[-1].squeeze()
            else:
                output, hidden = model(input, hidden)
                log_probs = output.squeeze()
            word_weights = log_probs.div(args.temperature).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
            if is_transformer_model:
                word_tensor = torch.Tensor([[word_idx]]).long()
                input = torch.cat([input, word_tensor], 0)
            else:
                input.fill_(word_idx)
            total_nll -= log_probs[word_idx].item()
            words.append(f"w{word_idx.item()}")
    for k in range(0, len(words), 20):
        print(" ".join(words[k : k + 20]))
    return total_nll / args.words


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="PyTorch RNN/LSTM/GRU Language Model")
    parser.add_argument(
        "--model", type=str, default="LSTM", help="LSTM, GRU, RNN_TANH, RNN_RELU, Transformer"
    )
    parser.add_argument("--ntokens", type=int, default=50, help="size of the vocabulary")
    parser.add_argument("--ntrain", type=int, default=1200, help="tokens in the training set")
    parser.add_argument("--emsize", type=int, default=32, help="size of word embeddings")
    parser.add_argument("--nhid", type=int, default=32, help="number of hidden units per layer")
    parser.add_argument("--nlayers", type=int, default=2, help="number of layers")
    parser.add_argument(
        "--nhead", type=int, default=2, help="the number of heads in the Transformer encoder"
    )
    parser.add_argument("--lr", type=float, default=20.0, help="initial learning rate")
    parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
    parser.add_argument("--epochs", type=int, default=2, help="upper epoch limit")
    parser.add_argument("--steps", type=int, default=8, help="training batches per epoch")
    parser.add_argument("--batch-size", type=int, default=8, help="batch size")
    parser.add_argument("--eval-batch-size", type=int, default=5, help="evaluation batch size")
    parser.add_argument("--bptt", type=int, default=12, help="sequence length")
    parser.add_argument("--dropout", type=float, default=0.2, help="dropout applied to layers")
    parser.add_argument("--tied", action="store_true", help="tie the word embedding and softmax")
    parser.add_argument("--packed", action="store_true", help="train on packed sentences")
    parser.add_argument("--words", type=int, default=0, help="number of words to generate")
    parser.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="temperature - higher will increase diversity",
    )
    parser.add_argument("--seed", type=int, default=1111, help="random seed")
    parser.add_argument("--log-interval", type=int, default=4, help="report interval")
    parser.add_argument("--save", type=str, default=None, help="path to save the final model")
    parser.add_argument(
        "--save-init", type=str, default=None, help="save the initial state_dict here"
    )
    parser.add_argument("--init", type=str, default=None, help="initial state_dict to load")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[float]:
    """Train, save and reload the model, and sample from it; the training losses, the test
    loss, then (with ``--words``) the generated words' mean negative log-likelihood."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    corpus = Corpus(args.ntokens, args.ntrain, args.seed)
    train_data = batchify(corpus.train, args.batch_size)
    val_data = batchify(corpus.valid, args.eval_batch_size)
    test_data = batchify(corpus.test, args.eval_batch_size)

    if args.model == "Transformer":
        model = TransformerModel(
            args.ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout
        )
    else:
        model = RNNModel(
            args.model, args.ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied
        )
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    criterion = nn.NLLLoss(ignore_index=PAD) if args.packed else nn.NLLLoss()

    with tempfile.TemporaryDirectory() as tmp:
        save = args.save or os.path.join(tmp, "model.pt")
        lr = args.lr
        best_val_loss = None
        losses: list[float] = []
        for epoch in range(1, args.epochs + 1):
            epoch_start_time = time.time()
            if args.packed:
                losses += train_packed(model, corpus.sentences, criterion, args, lr)
            else:
                losses += train(model, train_data, criterion, args, lr, epoch)
            val_loss = evaluate(model, val_data, criterion, args)
            print("-" * 89)
            print(
                f"| end of epoch {epoch:3d} | time: {time.time() - epoch_start_time:5.2f}s | "
                f"valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}"
            )
            print("-" * 89)
            # Save the model if the validation loss is the best we've seen so far.
            if best_val_loss is None or val_loss < best_val_loss:
                with open(save, "wb") as f:
                    torch.save(model, f)
                best_val_loss = val_loss
            else:
                # Anneal the learning rate if no improvement has been seen in the validation set.
                lr /= 4.0

        # Load the best saved model.
        with open(save, "rb") as f:
            if args.model == "Transformer":
                safe_globals = [
                    PositionalEncoding,
                    TransformerModel,
                    torch.nn.functional.relu,
                    torch.nn.modules.activation.MultiheadAttention,
                    torch.nn.modules.container.ModuleList,
                    torch.nn.modules.dropout.Dropout,
                    torch.nn.modules.linear.Linear,
                    torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
                    torch.nn.modules.normalization.LayerNorm,
                    torch.nn.modules.sparse.Embedding,
                    torch.nn.modules.transformer.TransformerEncoder,
                    torch.nn.modules.transformer.TransformerEncoderLayer,
                ]
            else:
                safe_globals = [
                    RNNModel,
                    torch.nn.modules.dropout.Dropout,
                    torch.nn.modules.linear.Linear,
                    torch.nn.modules.rnn.GRU,
                    torch.nn.modules.rnn.LSTM,
                    torch.nn.modules.rnn.RNN,
                    torch.nn.modules.sparse.Embedding,
                ]
            with torch.serialization.safe_globals(safe_globals):
                model = torch.load(f)
            # After load the rnn params are not a continuous chunk of memory;
            # this makes them a continuous chunk, and will speed up the forward pass.
            if args.model != "Transformer":
                model.rnn.flatten_parameters()

    test_loss = evaluate(model, test_data, criterion, args)
    print("=" * 89)
    print(f"| End of training | test loss {test_loss:5.2f} | test ppl {math.exp(test_loss):8.2f}")
    print("=" * 89)
    if args.words:
        gen_nll = generate(model, args)
        print(f"| Generated {args.words} words | their mean NLL {gen_nll:5.2f}")
        return [*losses, test_loss, gen_nll]
    return [*losses, test_loss]


if __name__ == "__main__":
    main()
