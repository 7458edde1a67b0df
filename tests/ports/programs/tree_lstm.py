"""Child-sum Tree-LSTM sentiment classification (Tai et al.), in float64, over random parse
trees held in a plain Python ``Tree`` class: a recursive ``forward`` that visits the children
first, the children's states stacked and summed (``torch.stack``, ``sum(dim=0)``), the
input/output/update gates from one linear map split by ``torch.chunk``, a forget gate per
child (``F.linear`` broadcasting over the children), a loss at every node (``nn.NLLLoss``
of ``log_softmax``), leaves with ``torch.zeros`` states, ``Adagrad(weight_decay)`` with the
embedding frozen by ``requires_grad_(False)`` and an ``nn.ModuleDict`` of heads. Returns the
losses, the root predictions and some gradients.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Tree:
    def __init__(self, word=None, label=0):
        self.word, self.label, self.children, self.state = word, label, [], None

    def add_child(self, child):
        self.children.append(child)

    def size(self):
        return 1 + sum(c.size() for c in self.children)

    def depth(self):
        return 1 + max((c.depth() for c in self.children), default=0)


def random_tree(depth, vocab):
    node = Tree(label=int(torch.randint(0, 3, (1,))))
    if depth == 0 or torch.rand(1).item() < 0.3:
        node.word = int(torch.randint(0, vocab, (1,)))
        return node
    for _ in range(int(torch.randint(1, 4, (1,)))):
        node.add_child(random_tree(depth - 1, vocab))
    return node


class ChildSumTreeLSTM(nn.Module):
    def __init__(self, in_dim, mem_dim):
        super().__init__()
        self.mem_dim = mem_dim
        self.ioux = nn.Linear(in_dim, 3 * mem_dim)
        self.iouh = nn.Linear(mem_dim, 3 * mem_dim)
        self.fx = nn.Linear(in_dim, mem_dim)
        self.fh = nn.Linear(mem_dim, mem_dim)

    def node_forward(self, inputs, child_c, child_h):
        child_h_sum = torch.sum(child_h, dim=0, keepdim=True)
        iou = self.ioux(inputs) + self.iouh(child_h_sum)
        i, o, u = torch.chunk(iou, 3, dim=1)
        i, o, u = torch.sigmoid(i), torch.sigmoid(o), torch.tanh(u)
        f = torch.sigmoid(self.fh(child_h) + self.fx(inputs).repeat(len(child_h), 1))
        fc = torch.mul(f, child_c)
        c = torch.mul(i, u) + torch.sum(fc, dim=0, keepdim=True)
        h = torch.mul(o, torch.tanh(c))
        return c, h

    def forward(self, tree, embeddings):
        for child in tree.children:
            self.forward(child, embeddings)
        if tree.word is None:
            inputs = torch.zeros(1, embeddings.embedding_dim)
        else:
            inputs = embeddings(torch.tensor([tree.word]))
        if not tree.children:
            child_c = inputs.new_zeros(1, self.mem_dim)
            child_h = inputs.new_zeros(1, self.mem_dim)
        else:
            child_c, child_h = zip(*map(lambda x: x.state, tree.children))
            child_c, child_h = torch.cat(child_c, dim=0), torch.cat(child_h, dim=0)
        tree.state = self.node_forward(inputs, child_c, child_h)
        return tree.state


class SentimentModel(nn.Module):
    def __init__(self, vocab, in_dim=5, mem_dim=6, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, in_dim)
        self.tree_lstm = ChildSumTreeLSTM(in_dim, mem_dim)
        self.heads = nn.ModuleDict({"node": nn.Linear(mem_dim, classes),
                                    "root": nn.Linear(mem_dim, classes)})  # fmt: skip

    def forward(self, tree):
        self.tree_lstm(tree, self.emb)
        return self.collect(tree, "root")

    def collect(self, tree, head):
        out = [(F.log_softmax(self.heads[head](tree.state[1]), dim=1), tree.label)]
        for child in tree.children:
            out += self.collect(child, "node")
        return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trees", type=int, default=3)
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
    model = SentimentModel(vocab=10)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    model.emb.weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adagrad(params, lr=0.05, weight_decay=1e-4)
    criterion = nn.NLLLoss()
    out = []
    for _ in range(args.trees):
        tree = random_tree(3, 10)
        optimizer.zero_grad()
        outputs = model(tree)
        loss = sum(criterion(logp, torch.tensor([label])) for logp, label in outputs)
        loss = loss / len(outputs)
        loss.backward()
        optimizer.step()
        out += [loss.item(), tree.size(), tree.depth(), outputs[0][0].argmax().item()]
    out += model.tree_lstm.fh.weight.grad[0].tolist() + [model.emb.weight.grad is None]
    out += optimizer.state[model.heads["root"].bias]["sum"].tolist()
    return out
