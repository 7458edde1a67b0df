"""An image-captioning model ("show and tell") on random images and captions, in float64: a
small CNN encoder (Conv2d, BatchNorm2d, AdaptiveAvgPool2d, flatten) whose feature is the first
input of an LSTM decoder; captions sorted by length (``sort(descending=True)``), teacher
forcing through ``pack_padded_sequence`` and the loss on the packed targets; Adam with
``clip_grad_norm_``; then beam search for one image in eval mode: ``log_softmax`` scores,
``topk`` over the flattened beams x vocabulary, the beam by ``div(rounding_mode="floor")``
and the word by ``%``, finished beams set aside when they emit ``<end>``. Returns the losses,
the beams' scores and tokens, and some parameters and gradients.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence

PAD, START, END = 0, 1, 2
VOCAB = 12


class EncoderCNN(nn.Module):
    def __init__(self, embed_size):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, 3, padding=1),
            nn.BatchNorm2d(6),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 8, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self.linear = nn.Linear(8, embed_size)
        self.bn = nn.BatchNorm1d(embed_size, momentum=0.01)

    def forward(self, images):
        features = torch.flatten(self.features(images), 1)
        return self.bn(self.linear(features))


class DecoderRNN(nn.Module):
    def __init__(self, embed_size, hidden_size, vocab_size, max_seq_length=6):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.lstm = nn.LSTM(embed_size, hidden_size, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)
        self.max_seg_length = max_seq_length

    def forward(self, features, captions, lengths):
        embeddings = self.embed(captions)
        embeddings = torch.cat((features.unsqueeze(1), embeddings), 1)
        packed = pack_padded_sequence(embeddings, lengths, batch_first=True)
        hiddens, _ = self.lstm(packed)
        return self.linear(hiddens[0])

    def beam_search(self, feature, beam_size=3):
        inputs = feature.unsqueeze(0).unsqueeze(1)  # (1, 1, embed)
        _, states = self.lstm(inputs)
        seqs = torch.full((1, 1), START, dtype=torch.long)
        scores = torch.zeros(1)
        finished = []
        for _ in range(self.max_seg_length):
            hiddens, new_states = self.lstm(self.embed(seqs[:, -1:]), states)
            logp = F.log_softmax(self.linear(hiddens.squeeze(1)), dim=-1)
            total = (scores.unsqueeze(1) + logp).view(-1)
            top_scores, top_index = total.topk(beam_size)
            beam = torch.div(top_index, VOCAB, rounding_mode="floor")
            word = top_index % VOCAB
            seqs = torch.cat([seqs[beam], word.unsqueeze(1)], dim=1)
            states = tuple(s[:, beam] for s in new_states)
            done = word == END
            for i in done.nonzero().flatten().tolist():
                finished.append((top_scores[i].item(), seqs[i].tolist()))
            keep = ~done
            if not keep.any():
                break
            seqs, scores = seqs[keep], top_scores[keep]
            states = tuple(s[:, keep].contiguous() for s in states)
            beam_size = int(keep.sum())
        for i in range(seqs.size(0)):
            finished.append((scores[i].item(), seqs[i].tolist()))
        return sorted(finished, key=lambda f: -f[0])


def make_batch(n=6):
    images = torch.randn(n, 3, 8, 8)
    lengths = torch.randint(3, 7, (n,))
    lengths, order = lengths.sort(descending=True)
    images = images[order]
    captions = torch.zeros(n, int(lengths[0]), dtype=torch.long)
    for i, length in enumerate(lengths.tolist()):
        words = torch.randint(3, VOCAB, (length,))
        words[0], words[-1] = START, END
        captions[i, :length] = words
    return images, captions, lengths


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return train(args)
    finally:
        torch.set_default_dtype(previous)


def train(args):
    torch.manual_seed(0)
    encoder, decoder = EncoderCNN(5), DecoderRNN(5, 7, VOCAB)
    if args.init:
        state = torch.load(args.init)
        encoder.load_state_dict(state["encoder"])
        decoder.load_state_dict(state["decoder"])
    if args.save_init:
        torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict()},
                   args.save_init)  # fmt: skip
    params = list(decoder.parameters()) + list(encoder.linear.parameters())
    params += list(encoder.bn.parameters())
    optimizer = torch.optim.Adam(params, lr=0.01)
    criterion = nn.CrossEntropyLoss()
    out = []
    for _ in range(args.steps):
        images, captions, lengths = make_batch()
        # the feature takes the place of <start>: the model reads captions[:, :-1] after it
        targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
        features = encoder(images)
        outputs = decoder(features, captions[:, :-1], lengths)
        loss = criterion(outputs, targets)
        decoder.zero_grad()
        encoder.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
        optimizer.step()
        out += [loss.item(), norm.item(), torch.exp(loss).item()]
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        feature = encoder(torch.randn(1, 3, 8, 8))[0]
        for score, tokens in decoder.beam_search(feature):
            out += [score, len(tokens), *tokens]
    out += encoder.bn.running_mean.tolist() + encoder.features[1].running_var.tolist()
    out += decoder.lstm.weight_hh_l0.grad[:3].flatten().tolist()
    out += [decoder.embed.weight.grad[PAD].abs().sum().item()]
    return out
