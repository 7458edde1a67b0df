"""Saved tensors whose memory a later in-place write changes, compared with torch 2.13: a
vector saved by a product with a matrix (``h[0] @ W``, ``mv``; its unsqueezed copy must share
the vector's version counter), and the result of an in-place op on a view that its node saves
(``b[:, :2].sigmoid_()``; a later write into the base moves that result's version). Next to
each refusal, the common patterns that must keep computing (an RNN step written out of place,
a buffer written before its rows are used)."""

from __future__ import annotations

from typing import Any, Callable

from snippet_outcomes import grid, leaf, refused_in_place, same_each


def _product(form: str, written: str, grads: str) -> Callable:
    def program(m: Any) -> Any:
        w = leaf(m, 3, 3) if "w" in grads else grid(m, 3, 3)
        h = leaf(m, 2, 3) * 1 if "h" in grads else grid(m, 2, 3)  # (a non-leaf: writable)
        v = h[0] if written == "sibling" else h[0].clone()
        y = {
            "vecmat": lambda: v @ w,
            "mv": lambda: m.mv(w, v),
            "matvec": lambda: w @ v,
            "batch": lambda: v @ w.expand(2, 3, 3),
            "rows": lambda: w.expand(2, 3, 3) @ v,
        }[form]()
        if written == "sibling":
            h[1] = 5
        else:
            v.add_(1)
        return refused_in_place(lambda: y.sum().backward())

    return program


def _inference_vector(form: str) -> Callable:
    def program(m: Any) -> Any:
        w = leaf(m, 3, 3)
        with m.inference_mode():
            v = grid(m, 3)
        y = v @ w if form == "vecmat" else m.mv(w, v)  # (saves v: refused, as torch)
        y.sum().backward()
        return w.grad

    return program


def test_vectors_saved_by_products_written_later(backend: str) -> None:
    programs = {
        f"{form}-{written}-{grads}": _product(form, written, grads)
        for form in ("vecmat", "mv", "matvec", "batch", "rows")
        for written in ("sibling", "itself")
        for grads in ("w", "h", "wh")
    }
    programs.update({f"inference-{f}": _inference_vector(f) for f in ("vecmat", "mv")})
    same_each(programs, backend)


def _view_result(kind: str) -> Callable:
    def program(m: Any) -> Any:
        x = leaf(m, 2, 8)
        b = x * 0.1
        i, f = b[:, :2], b[:, 2:4]
        y = (x[:, :2] * 0.1).exp()
        if kind == "copy":
            i.copy_(y)  # (copy_'s node saves nothing: later writes are fine)
        elif kind == "setitem":
            b[:, :2] = y
        elif kind == "clamp_":
            i.clamp_(0, 0.5)
        elif kind == "no_grad":
            i.exp_()
            with m.no_grad():
                f.mul_(2)
        elif kind == "data":
            i.exp_()
            b.data[0, 5] = 3  # (unseen by version counters)
        else:
            getattr(i, kind)()
        if kind not in ("no_grad", "data"):
            f.sigmoid_()  # (LSTM gates in place, one slice after another)
        refused = refused_in_place(lambda: (b * b).sum().backward())
        return refused, None if refused else x.grad

    return program


def test_results_saved_by_view_writes_written_later(backend: str) -> None:
    kinds = ("sigmoid_", "exp_", "tanh_", "relu_", "copy", "setitem", "clamp_", "no_grad")
    same_each({kind: _view_result(kind) for kind in (*kinds, "data")}, backend)


def _rnn(form: str) -> Callable:
    def program(m: Any) -> Any:
        wl, ul, xl = leaf(m, 3, 3), leaf(m, 3, 3), leaf(m, 4, 3)
        w, u, xs = wl * 0.1, ul * 0.05, xl * 0.1
        if form == "rebound":  # h = tanh(...) each step, kept in a list
            h, out = m.zeros(3, dtype=m.float64), []
            for t in range(4):
                h = m.tanh(xs[t] @ w + h @ u)
                out.append(h)
            loss = m.stack(out).sum()
        elif form == "buffer-out":  # each state written into a buffer after its use
            h, out = m.zeros(3, dtype=m.float64), m.zeros(4, 3, dtype=m.float64)
            for t in range(4):
                h = m.tanh(xs[t] @ w + h @ u)
                out[t] = h
            loss = out.sum()
        else:  # an LSTM-style cell with gates out of place
            h, c = m.zeros(1, 3, dtype=m.float64), m.zeros(1, 3, dtype=m.float64)
            wg = w.repeat(1, 4)
            for t in range(4):
                i, f, g, o = (xs[t : t + 1] @ wg + (h @ u).repeat(1, 4)).chunk(4, 1)
                c = m.sigmoid(f) * c + m.sigmoid(i) * m.tanh(g)
                h = m.sigmoid(o) * m.tanh(c)
            loss = h.sum()
        loss.backward()
        return wl.grad, ul.grad, xl.grad

    return program


def test_recurrences_written_the_usual_way(backend: str) -> None:
    same_each({form: _rnn(form) for form in ("rebound", "buffer-out", "lstm")}, backend)
