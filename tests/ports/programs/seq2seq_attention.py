"""Sequence-to-sequence translation with attention, after the PyTorch tutorial "NLP From
Scratch: Translation with a Sequence to Sequence Network and Attention" and the chatbot
tutorial (batched, padded, packed encoder; Luong "general" or Bahdanau "concat" attention).

The "language pair" is synthetic: the target sentence is the source reversed with every word
mapped through a fixed permutation, so the model has something to learn without a download.
"""

from __future__ import annotations

import argparse
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.optim.lr_scheduler import ReduceLROnPlateau

PAD_token = 0
SOS_token = 1
EOS_token = 2
FIRST_WORD = 3


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, n_layers=1, dropout=0.0):
        super(EncoderRNN, self).__init__()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size, padding_idx=PAD_token)
        # Initialize GRU; the input_size and hidden_size params are both set to 'hidden_size'
        # because our input size is a word embedding with number of features == hidden_size
        self.gru = nn.GRU(
            hidden_size,
            hidden_size,
            n_layers,
            dropout=(0 if n_layers == 1 else dropout),
            bidirectional=True,
        )

    def forward(self, input_seq, input_lengths, hidden=None):
        # Convert word indexes to embeddings
        embedded = self.embedding(input_seq)
        # Pack padded batch of sequences for RNN module
        packed = pack_padded_sequence(embedded, input_lengths.cpu())
        # Forward pass through GRU
        outputs, hidden = self.gru(packed, hidden)
        # Unpack padding
        outputs, _ = pad_packed_sequence(outputs)
        # Sum bidirectional GRU outputs
        outputs = outputs[:, :, : self.hidden_size] + outputs[:, :, self.hidden_size :]
        # Return output and final hidden state
        return outputs, hidden


class Attn(nn.Module):
    """Luong attention layer ("dot", "general", "concat") or Bahdanau's additive one."""

    def __init__(self, method, hidden_size):
        super(Attn, self).__init__()
        self.method = method
        if self.method not in ["dot", "general", "concat", "bahdanau"]:
            raise ValueError(self.method, "is not an appropriate attention method.")
        self.hidden_size = hidden_size
        if self.method == "general":
            self.attn = nn.Linear(self.hidden_size, hidden_size)
        elif self.method == "concat":
            self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
            self.v = nn.Parameter(torch.FloatTensor(hidden_size))
        elif self.method == "bahdanau":
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

    def dot_score(self, hidden, encoder_output):
        return torch.sum(hidden * encoder_output, dim=2)

    def general_score(self, hidden, encoder_output):
        energy = self.attn(encoder_output)
        return torch.sum(hidden * energy, dim=2)

    def concat_score(self, hidden, encoder_output):
        energy = self.attn(
            torch.cat((hidden.expand(encoder_output.size(0), -1, -1), encoder_output), 2)
        ).tanh()
        return torch.sum(self.v * energy, dim=2)

    def bahdanau_score(self, hidden, encoder_output):
        scores = self.Va(torch.tanh(self.Wa(hidden) + self.Ua(encoder_output)))
        return scores.squeeze(2)

    def forward(self, hidden, encoder_outputs, mask):
        # Calculate the attention weights (energies) based on the given method
        attn_energies = getattr(self, self.method + "_score")(hidden, encoder_outputs)
        # Transpose max_length and batch_size dimensions
        attn_energies = attn_energies.t()
        # Padded source positions get no attention
        attn_energies = attn_energies.masked_fill(mask == 0, -1e10)
        # Return the softmax normalized probability scores (with added dimension)
        return F.softmax(attn_energies, dim=1).unsqueeze(1)


class AttnDecoderRNN(nn.Module):
    def __init__(self, attn_model, hidden_size, output_size, n_layers=1, dropout=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.attn_model = attn_model
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.dropout = dropout

        self.embedding = nn.Embedding(output_size, hidden_size)
        self.embedding_dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(
            hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout)
        )
        self.concat = nn.Linear(hidden_size * 2, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)
        self.attn = Attn(attn_model, hidden_size)

    def forward(self, input_step, last_hidden, encoder_outputs, mask):
        # Note: we run this one step (word) at a time
        embedded = self.embedding(input_step)
        embedded = self.embedding_dropout(embedded)
        rnn_output, hidden = self.gru(embedded, last_hidden)
        attn_weights = self.attn(rnn_output, encoder_outputs, mask)
        # Multiply attention weights to encoder outputs to get new "weighted sum" context vector
        context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
        # Concatenate weighted context vector and GRU output using Luong eq. 5
        rnn_output = rnn_output.squeeze(0)
        context = context.squeeze(1)
        concat_input = torch.cat((rnn_output, context), 1)
        concat_output = torch.tanh(self.concat(concat_input))
        # Predict next word using Luong eq. 6
        output = self.out(concat_output)
        output = F.softmax(output, dim=1)
        return output, hidden, attn_weights


def maskNLLLoss(inp, target, mask):
    nTotal = mask.sum()
    crossEntropy = -torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1))
    loss = crossEntropy.masked_select(mask).mean()
    return loss, nTotal.item()


def make_pairs(rng, n_pairs, n_words, min_len, max_len):
    permutation = rng.permutation(n_words - FIRST_WORD) + FIRST_WORD
    pairs = []
    for _ in range(n_pairs):
        length = int(rng.integers(min_len, max_len + 1))
        src = rng.integers(FIRST_WORD, n_words, size=length).tolist()
        tgt = [int(permutation[w - FIRST_WORD]) for w in reversed(src)]
        pairs.append((src, tgt))
    return pairs


def zeroPadding(seqs, fillvalue=PAD_token):
    longest = max(len(s) for s in seqs)
    return [[s[t] if t < len(s) else fillvalue for s in seqs] for t in range(longest)]


def batch2TrainData(pair_batch):
    """Padded (max_len, batch) input and output tensors, lengths, and the output mask."""
    pair_batch.sort(key=lambda p: len(p[0]), reverse=True)
    input_batch = [p[0] + [EOS_token] for p in pair_batch]
    output_batch = [p[1] + [EOS_token] for p in pair_batch]
    lengths = torch.tensor([len(indexes) for indexes in input_batch])
    inp = torch.LongTensor(zeroPadding(input_batch))
    max_target_len = max([len(indexes) for indexes in output_batch])
    output = torch.LongTensor(zeroPadding(output_batch))
    mask = output != PAD_token
    return inp, lengths, output, mask, max_target_len


def source_mask(input_variable):
    return (input_variable != PAD_token).t()


def train(
    input_variable,
    lengths,
    target_variable,
    mask,
    max_target_len,
    encoder,
    decoder,
    encoder_optimizer,
    decoder_optimizer,
    batch_size,
    clip,
    teacher_forcing_ratio,
):
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()

    loss = 0
    print_losses = []
    n_totals = 0

    encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
    src_mask = source_mask(input_variable)

    decoder_input = torch.LongTensor([[SOS_token for _ in range(batch_size)]])
    # Set initial decoder hidden state to the encoder's final hidden state
    decoder_hidden = encoder_hidden[: decoder.n_layers]

    # Determine if we are using teacher forcing this iteration
    use_teacher_forcing = True if random.random() < teacher_forcing_ratio else False

    for t in range(max_target_len):
        decoder_output, decoder_hidden, _ = decoder(
            decoder_input, decoder_hidden, encoder_outputs, src_mask
        )
        if use_teacher_forcing:
            # Teacher forcing: next input is current target
            decoder_input = target_variable[t].view(1, -1)
        else:
            # No teacher forcing: next input is decoder's own current output
            _, topi = decoder_output.topk(1)
            decoder_input = torch.LongTensor([[topi[i][0] for i in range(batch_size)]])
        mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
        loss += mask_loss
        print_losses.append(mask_loss.item() * nTotal)
        n_totals += nTotal

    loss.backward()

    # Clip gradients: gradients are modified in place
    nn.utils.clip_grad_norm_(encoder.parameters(), clip)
    _ = torch.nn.utils.clip_grad_value_(decoder.parameters(), clip)

    encoder_optimizer.step()
    decoder_optimizer.step()

    return sum(print_losses) / n_totals


class GreedySearchDecoder(nn.Module):
    def __init__(self, encoder, decoder):
        super(GreedySearchDecoder, self).__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, input_seq, input_length, max_length):
        encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
        decoder_hidden = encoder_hidden[: self.decoder.n_layers]
        decoder_input = torch.ones(1, 1, dtype=torch.long) * SOS_token
        all_tokens = torch.zeros([0], dtype=torch.long)
        all_scores = torch.zeros([0])
        mask = source_mask(input_seq)
        for _ in range(max_length):
            decoder_output, decoder_hidden, _ = self.decoder(
                decoder_input, decoder_hidden, encoder_outputs, mask
            )
            decoder_scores, decoder_input = torch.max(decoder_output, dim=1)
            all_tokens = torch.cat((all_tokens, decoder_input), dim=0)
            all_scores = torch.cat((all_scores, decoder_scores), dim=0)
            decoder_input = torch.unsqueeze(decoder_input, 0)
        return all_tokens, all_scores


def evaluate(encoder, decoder, pairs):
    """Mean masked NLL over ``pairs`` (teacher-forced), and greedy decoding's token accuracy."""
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        inp, lengths, target, mask, max_target_len = batch2TrainData(list(pairs))
        encoder_outputs, hidden = encoder(inp, lengths)
        hidden = hidden[: decoder.n_layers]
        src_mask = source_mask(inp)
        decoder_input = torch.full((1, inp.size(1)), SOS_token, dtype=torch.long)
        total, count = 0.0, 0
        for t in range(max_target_len):
            output, hidden, _ = decoder(decoder_input, hidden, encoder_outputs, src_mask)
            loss, n = maskNLLLoss(output, target[t], mask[t])
            total += loss.item() * n
            count += n
            decoder_input = target[t].unsqueeze(0)

        searcher = GreedySearchDecoder(encoder, decoder)
        correct = 0
        for src, tgt in pairs[:4]:
            indexes = [src + [EOS_token]]
            input_batch = torch.LongTensor(indexes).transpose(0, 1)
            tokens, scores = searcher(input_batch, torch.tensor([len(indexes[0])]), len(tgt))
            correct += (tokens == torch.tensor(tgt)).sum().item()
    encoder.train()
    decoder.train()
    return total / count, correct


def main(argv: list[str] | None = None) -> list[float]:
    """Train; each iteration's loss, then the evaluation loss."""
    parser = argparse.ArgumentParser(description="seq2seq with attention")
    parser.add_argument("--attn-model", default="general", help="dot, general, concat, bahdanau")
    parser.add_argument("--hidden-size", type=int, default=24)
    parser.add_argument("--encoder-n-layers", type=int, default=1)
    parser.add_argument("--decoder-n-layers", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--batch-size", type=int, default=6)
    parser.add_argument("--n-words", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--teacher-forcing-ratio", type=float, default=0.5)
    parser.add_argument("--learning-rate", type=float, default=0.005)
    parser.add_argument("--decoder-learning-ratio", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    pairs = make_pairs(rng, 48, args.n_words, 3, 7)
    val_pairs = make_pairs(rng, 8, args.n_words, 3, 7)

    encoder = EncoderRNN(args.n_words, args.hidden_size, args.encoder_n_layers, args.dropout)
    decoder = AttnDecoderRNN(
        args.attn_model, args.hidden_size, args.n_words, args.decoder_n_layers, args.dropout
    )
    if args.attn_model == "concat":
        nn.init.normal_(decoder.attn.v, std=0.1)
    if args.save_init:
        torch.save({"en": encoder.state_dict(), "de": decoder.state_dict()}, args.save_init)
    if args.init:
        checkpoint = torch.load(args.init)
        encoder.load_state_dict(checkpoint["en"])
        decoder.load_state_dict(checkpoint["de"])

    encoder.train()
    decoder.train()
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=args.learning_rate)
    decoder_optimizer = optim.Adam(
        decoder.parameters(), lr=args.learning_rate * args.decoder_learning_ratio
    )
    scheduler = ReduceLROnPlateau(decoder_optimizer, mode="min", factor=0.5, patience=0)

    losses = []
    for iteration in range(1, args.iterations + 1):
        training_batch = [random.choice(pairs) for _ in range(args.batch_size)]
        input_variable, lengths, target_variable, mask, max_target_len = batch2TrainData(
            training_batch
        )
        loss = train(
            input_variable,
            lengths,
            target_variable,
            mask,
            max_target_len,
            encoder,
            decoder,
            encoder_optimizer,
            decoder_optimizer,
            args.batch_size,
            args.clip,
            args.teacher_forcing_ratio,
        )
        losses.append(loss)
        scheduler.step(loss)
        lr = decoder_optimizer.param_groups[0]["lr"]
        print(f"Iteration: {iteration}; loss: {loss:.4f}; decoder lr {lr:.5f}")

    val_loss, correct = evaluate(encoder, decoder, val_pairs)
    print(f"validation loss {val_loss:.4f}; greedy tokens correct {correct}")
    return [*losses, val_loss, float(correct)]


if __name__ == "__main__":
    main()
