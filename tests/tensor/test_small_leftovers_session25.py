"""Small differences from torch 2.13, compared with it (:mod:`snippet_outcomes`): a piece of
split or a view made under no_grad once its base changed in place (``grad``,
``retains_grad``, ``requires_grad_``, ``argsort``); ctc_loss's targets changed before
backward; what saved_tensors_hooks see of aminmax, var_mean and std_mean; and
``Tensor.tensor_split``'s keywords."""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any, Callable

from snippet_outcomes import same_each, walk

Program = Callable[[Any], Any]


# -- a view whose base changed in place -------------------------------------------------------


def _split_piece(m: Any) -> Any:
    """The first piece of a split whose base then changed in place (an invalid history)."""
    x = m.tensor([3.0, 1.0, 2.0, 0.5], dtype=m.float64, requires_grad=True)
    y = x * 1
    piece, _ = y.split(2)
    y.add_(1)
    return piece


def _no_grad_view(m: Any) -> Any:
    """A view made under no_grad of a tensor that requires grad, which then changed."""
    x = m.tensor([3.0, 1.0, 2.0, 0.5], dtype=m.float64, requires_grad=True)
    y = x * 1
    with m.no_grad():
        view = y[:2]
    y.add_(1)
    return view


def _grad_and_warnings(m: Any, make: Program) -> tuple:
    piece = make(m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grad = piece.grad
    return grad, tuple(str(w.message)[:40] for w in caught)


def _argsort_without_grad(m: Any, make: Program) -> Any:
    piece = make(m)
    with m.no_grad():
        return piece.argsort()


def _requires_grad_off(m: Any, make: Program) -> Any:
    piece = make(m)
    return piece.requires_grad_(False) is piece, piece.requires_grad


VIEWS = {"split_piece": _split_piece, "no_grad_view": _no_grad_view}


def test_grad_of_a_view_whose_base_changed(spec: str) -> None:
    # (torch warns for the piece, a non-leaf's grad_fn, not for the no_grad view)
    same_each({k: partial(_grad_and_warnings, make=f) for k, f in VIEWS.items()}, spec)


def test_retains_grad_of_a_view_whose_base_changed(spec: str) -> None:
    same_each({k: lambda m, f=f: f(m).retains_grad for k, f in VIEWS.items()}, spec)


def test_requires_grad_off_on_a_view_whose_base_changed(spec: str) -> None:
    programs = {k: partial(_requires_grad_off, make=f) for k, f in VIEWS.items()}
    programs["no_grad_view_on"] = lambda m: _no_grad_view(m).requires_grad_(True).requires_grad
    same_each(programs, spec)


def test_argsort_of_a_view_whose_base_changed(spec: str) -> None:
    programs: dict[str, Program] = {}
    for name, make in VIEWS.items():
        programs[f"{name}_method"] = lambda m, f=make: f(m).argsort()
        programs[f"{name}_function"] = lambda m, f=make: m.argsort(f(m), descending=True)
        programs[f"{name}_stable"] = lambda m, f=make: f(m).argsort(stable=True, dim=0)
        programs[f"{name}_no_grad"] = partial(_argsort_without_grad, make=make)
    same_each(programs, spec)


# -- ctc_loss's targets -----------------------------------------------------------------------


def _ctc(m: Any, reduction: str, changed: str, lengths_as: str = "tensor") -> Any:
    """ctc_loss of (T=3, N=1, C=3) log-probabilities, one operand changed in place before
    backward (targets unbatched where ``lengths_as`` is 'unbatched')."""
    x = m.tensor(
        [[-1.2, -0.8, -1.5], [-0.9, -1.1, -1.4], [-1.0, -1.3, -1.0]], dtype=m.float64
    ).requires_grad_()
    unbatched = lengths_as == "unbatched"
    log_probs = (x if unbatched else x.unsqueeze(1)).log_softmax(-1)
    targets = m.tensor([1, 2]) if unbatched else m.tensor([[1, 2]])
    input_lengths, target_lengths = m.tensor([3]), m.tensor([2])
    if lengths_as == "list":
        input_lengths, target_lengths = [3], [2]
    loss = m.nn.functional.ctc_loss(
        log_probs, targets, input_lengths, target_lengths, reduction=reduction
    )
    operands = {"targets": targets, "input_lengths": input_lengths}
    operands["target_lengths"] = target_lengths
    if changed != "nothing":
        operands[changed].add_(0)
    loss.sum().backward()
    return x.grad


def test_ctc_loss_targets_changed_in_place(spec: str) -> None:
    programs = {
        f"{reduction}_targets": partial(_ctc, reduction=reduction, changed="targets")
        for reduction in ("none", "mean", "sum")
    }
    for changed in ("nothing", "input_lengths", "target_lengths"):  # (torch saves no lengths)
        programs[changed] = partial(_ctc, reduction="mean", changed=changed)
    programs["unbatched"] = partial(
        _ctc, reduction="sum", changed="targets", lengths_as="unbatched"
    )
    programs["list_lengths"] = partial(_ctc, reduction="mean", changed="targets", lengths_as="list")
    same_each(programs, spec)


def test_ctc_loss_of_inference_targets(spec: str) -> None:
    def program(m: Any) -> Any:
        x = m.tensor([[-1.2, -0.8], [-0.9, -1.1]], dtype=m.float64, requires_grad=True)
        with m.inference_mode():
            targets = m.tensor([[1]])
        loss = m.nn.functional.ctc_loss(x.unsqueeze(1).log_softmax(2), targets, [2], [1])
        loss.backward()
        return x.grad

    same_each({"inference_targets": program}, spec)


def test_ctc_loss_node_inputs(spec: str) -> None:
    def program(m: Any) -> Any:
        x = m.tensor([[[-1.2, -0.8, -1.5]], [[-0.9, -1.1, -1.4]]], dtype=m.float64)
        log_probs = x.requires_grad_().log_softmax(2)
        loss = m.nn.functional.ctc_loss(log_probs, m.tensor([[1]]), [2], [1], reduction="none")
        return walk(loss.grad_fn, 2)

    same_each({"next_functions": program}, spec)


# -- saved_tensors_hooks of aminmax, var_mean, std_mean ---------------------------------------

TWO_OUTPUTS = {
    "aminmax": lambda m, x: x.aminmax(),
    "aminmax_dim": lambda m, x: m.aminmax(x, dim=1, keepdim=True),
    "var_mean": lambda m, x: m.var_mean(x, 1),
    "std_mean": lambda m, x: m.std_mean(x, 1),
    "std_mean_all": lambda m, x: m.std_mean(x, correction=0),
}


def _leaf(m: Any) -> Any:
    return m.tensor([[1.0, 5.0, 3.0], [2.0, 0.5, 4.0]], dtype=m.float64, requires_grad=True)


def _packed(m: Any, op: Callable) -> tuple:
    """What pack sees (shape, requires_grad, whether x or an output, grad_fn name), and how
    many times each hook ran by the end of backward."""
    x, seen, unpacked = _leaf(m), [], []

    def pack(t: Any) -> Any:
        seen.append(t)
        return t

    def unpack(t: Any) -> Any:
        unpacked.append(t)
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, unpack):
        outs = op(m, x)
    (outs[0].sum() + 3 * outs[1].sum()).backward()
    described = tuple(
        (
            tuple(t.shape),
            t.requires_grad,
            t is x,
            any(t is o for o in outs),
            None if t.grad_fn is None else t.grad_fn.name(),
        )
        for t in seen
    )
    return described, len(unpacked), x.grad


def _unpacked_as(m: Any, op: Callable, how: str) -> Any:
    """The gradient when the unpack hook gives other values (doubled) or a copy kept apart
    from the graph (an offload)."""
    x = _leaf(m)
    if how == "doubled":
        hooks = (lambda t: t.detach().clone(), lambda t: t * 2)
    else:
        hooks = (lambda t: t.tolist(), lambda t: m.tensor(t, dtype=m.float64))
    with m.autograd.graph.saved_tensors_hooks(*hooks):
        a, b = op(m, x)
    (a.sum() + 3 * b.sum()).backward()
    return x.grad


def _twice(m: Any, op: Callable, hooked: bool) -> Any:
    """A second derivative through the saved outputs (std_mean's std)."""
    x = _leaf(m)
    if hooked:
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            a, b = op(m, x)
    else:
        a, b = op(m, x)
    (g,) = m.autograd.grad(a.pow(3).sum() + b.sum(), x, create_graph=True)
    g.pow(2).sum().backward()
    return g, x.grad


def test_pack_hooks_see_what_two_output_reductions_save(spec: str) -> None:
    same_each({k: partial(_packed, op=f) for k, f in TWO_OUTPUTS.items()}, spec)


def test_unpack_hooks_of_two_output_reductions(spec: str) -> None:
    programs = {
        f"{name}_{how}": partial(_unpacked_as, op=op, how=how)
        for name, op in TWO_OUTPUTS.items()
        for how in ("doubled", "offloaded")
    }
    for name in ("std_mean", "var_mean", "aminmax"):
        for hooked in (False, True):
            programs[f"{name}_twice_{hooked}"] = partial(
                _twice, op=TWO_OUTPUTS[name], hooked=hooked
            )
    same_each(programs, spec)


# -- Tensor.tensor_split's keywords -----------------------------------------------------------


def _six(m: Any) -> Any:
    return m.arange(6.0, dtype=m.float64)


TENSOR_SPLIT_KEYWORDS: dict[str, Program] = {
    "sections_float_tensor": lambda m: _six(m).tensor_split(sections=m.tensor(2.0)),
    "sections_int": lambda m: _six(m).tensor_split(sections=4),
    "sections_list": lambda m: _six(m).tensor_split(sections=[2]),
    "sections_dim": lambda m: _six(m).reshape(2, 3).tensor_split(sections=2, dim=1),
    "indices_tensor": lambda m: _six(m).tensor_split(indices=m.tensor([1])),
    "indices_zero_dim_tensor": lambda m: _six(m).tensor_split(indices=m.tensor(1)),
    "indices_int": lambda m: _six(m).tensor_split(indices=2),
    "indices_list": lambda m: _six(m).tensor_split(indices=[1, 4]),
    "indices_dim": lambda m: _six(m).reshape(2, 3).tensor_split(indices=(1,), dim=1),
    "tensor_int": lambda m: _six(m).tensor_split(tensor_indices_or_sections=2),
    "tensor_list": lambda m: _six(m).tensor_split(tensor_indices_or_sections=[1]),
    "tensor_tensor": lambda m: _six(m).tensor_split(tensor_indices_or_sections=m.tensor([1, 4])),
    "two_names": lambda m: _six(m).tensor_split(sections=2, indices=[1]),
    "hsplit_indices_tensor": lambda m: _six(m).hsplit(indices=m.tensor([1])),
    "hsplit_sections": lambda m: _six(m).hsplit(sections=3),
    "vsplit_indices": lambda m: _six(m).reshape(3, 2).vsplit(indices=[1]),
    "dsplit_sections": lambda m: _six(m).reshape(1, 1, 6).dsplit(sections=2),
}


def test_tensor_split_method_keywords(spec: str) -> None:
    same_each(TENSOR_SPLIT_KEYWORDS, spec)


def test_tensor_split_sections_of_an_int_tensor(spec: str) -> None:
    same_each(
        {
            "method_zero_dim": lambda m: _six(m).tensor_split(sections=m.tensor(2)),
            "method_one_element": lambda m: _six(m).tensor_split(sections=m.tensor([[3]])),
            "function": lambda m: m.tensor_split(_six(m), sections=m.tensor(2)),
            "hsplit": lambda m: _six(m).hsplit(sections=m.tensor(2)),
            "int32": lambda m: _six(m).tensor_split(sections=m.tensor(2, dtype=m.int32)),
            "bool": lambda m: _six(m).tensor_split(sections=m.tensor(True)),
            "float": lambda m: _six(m).tensor_split(sections=m.tensor(2.0)),
            "two_elements": lambda m: _six(m).tensor_split(sections=m.tensor([2, 3])),
        },
        spec,
    )
