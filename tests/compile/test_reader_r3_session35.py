"""Reader r3, session 35: tw.compile's reuse of a replayed result's nodes (released.py):
a new result's grad_fn is fresh and the previous call's input dies with its result (both
failed with wave 1's first reuse test)."""

from __future__ import annotations

import weakref

from snippet_outcomes import same


def _step(m, p):
    def step(x):
        p.grad = None
        loss = p @ x  # (DotBackward0: one node of PyTorch's, on two leaves)
        loss.backward()
        return loss

    return m.compile(step) if m.__name__ == "tensorweaver" else step  # (torch: eager)


def _leaf(m):
    return m.ones(3, dtype=m.float64, requires_grad=True)


def metadata_of_a_new_result(m):
    f = _step(m, _leaf(m))
    for _ in range(4):  # (traces, then replays)
        f(_leaf(m))
    a = f(_leaf(m))
    assert a.grad_fn.next_functions  # (the node then holds its grad_fn weakly)
    a.grad_fn.metadata["k"] = 1
    del a
    return dict(f(_leaf(m)).grad_fn.metadata)


def earlier_input_freed(m):
    f = _step(m, _leaf(m))
    for _ in range(4):
        f(_leaf(m))
    x = _leaf(m)
    a = f(x)
    assert a.grad_fn.next_functions
    w = weakref.ref(x)
    del a, x
    kept = f(_leaf(m))  # noqa: F841  (the next replay's result, alive)
    return w() is None


def test_a_new_replayed_result_has_fresh_grad_fn_metadata():
    same(metadata_of_a_new_result, "numpy")


def test_a_replay_frees_the_previous_calls_input():
    same(earlier_input_freed, "numpy")


def backward_again(m):
    f = _step(m, _leaf(m))
    for _ in range(4):
        loss = f(_leaf(m))
    loss.backward()  # eagerly: "Trying to backward through the graph a second time"


def test_backward_through_a_replayed_composite_result_raises_as_eagerly():
    same(backward_again, "numpy")


def replayed_composite_result_face(m):
    f = _step(m, _leaf(m))
    for _ in range(4):
        loss = f(_leaf(m))
    fn = loss.grad_fn
    return fn.name(), [type(n).__name__ for n, _ in fn.next_functions], loss.requires_grad


def test_a_replayed_composite_result_shows_pytorch_s_node():
    same(replayed_composite_result_face, "numpy")
