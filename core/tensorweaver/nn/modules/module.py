"""``Module``: the base class of every layer, with PyTorch's registration and state API.

Parameters, buffers and submodules live in three ordered dicts (``_parameters``, ``_buffers``,
``_modules``) filled by ``__setattr__``, so traversal order is definition order, as in PyTorch.
Moving a module (``to``, ``float``, ``double``) rebinds each Parameter's storage in place, so
optimizers that hold the Parameter objects keep working.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.contract.dtypes import DType
from tensorweaver.nn.modules.backward_hook import BackwardHook
from tensorweaver.nn.parameter import Buffer, Parameter
from tensorweaver.tensor import Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """``load_state_dict``'s result, printed as PyTorch prints it."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_hook_ids = itertools.count()


class RemovableHandle:
    """What registering a hook returns; ``remove()`` unregisters the hook (and forgets it in
    ``extra_dict``, the tables of its options)."""

    __slots__ = ("_tables", "id")

    def __init__(
        self, hooks: dict[int, Any], *, extra_dict: Union[dict, list[dict], None] = None
    ) -> None:
        extra = extra_dict if isinstance(extra_dict, list) else [extra_dict] * bool(extra_dict)
        self._tables = [hooks, *extra]
        self.id = next(_hook_ids)

    def remove(self) -> None:
        for table in self._tables:
            table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _addindent(text: str, spaces: int) -> str:
    """Indent every line of ``text`` but the first (children inside a parent's repr)."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    pad = " " * spaces
    return "\n".join([first] + [pad + line for line in rest])


def _parse_to(*args: Any, **kwargs: Any) -> tuple[Any, Optional[DType]]:
    """Split ``Module.to``'s PyTorch-style arguments into ``(device, dtype)``."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"Module.to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, DType):
            dtype = arg
        elif isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, tw.Device)):
            device = arg
        elif isinstance(arg, bool):  # non_blocking given positionally
            continue
        else:
            raise TypeError(
                f"Module.to() expects a device (str or tw.Device), a dtype or a tensor, "
                f"got {type(arg).__name__}"
            )
    if dtype is not None and not dtype.is_floating_point:
        raise TypeError(
            f"Module.to() only accepts floating point dtypes, but got desired dtype={dtype}"
        )
    return device, dtype


class Module:
    """Base class for all neural network modules; subclasses define ``forward``."""

    training: bool
    _version: int = 1  # state_dict layout version, bumped by subclasses that change it

    def __init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", OrderedDict())
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks_with_kwargs", {})
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_hooks_with_kwargs", {})
        set_(self, "_forward_hooks_always_called", {})
        set_(self, "_backward_pre_hooks", OrderedDict())
        set_(self, "_backward_hooks", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
        ):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        """``forward`` between the forward hooks, its inputs and outputs wired to the backward
        hooks, in PyTorch's order."""
        for hook_id, hook in tuple(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward = None
        if self._backward_hooks or self._backward_pre_hooks:
            backward = BackwardHook(
                self, list(self._backward_hooks.values()), list(self._backward_pre_hooks.values())
            )
            args = backward.setup_input_hook(args)
        output = None
        called: set[int] = set()
        try:
            output = self.forward(*args, **kwargs)
            for hook_id, hook in tuple(self._forward_hooks.items()):
                called.add(hook_id)
                output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
        except Exception:
            # Hooks registered with always_call=True still run, then the error propagates.
            for hook_id, hook in tuple(self._forward_hooks.items()):
                if hook_id not in self._forward_hooks_always_called or hook_id in called:
                    continue
                try:
                    output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
                except Exception as err:
                    warnings.warn(
                        "forward hook with always_call=True raised an exception that was "
                        f"silenced as another error was raised in forward: {err}",
                        stacklevel=2,
                    )
            raise
        return output if backward is None else backward.setup_output_hook(output)

    def _run_forward_hook(
        self, hook_id: int, hook: Callable, args: tuple, kwargs: dict, output: Any
    ) -> Any:
        if hook_id in self._forward_hooks_with_kwargs:
            result = hook(self, args, kwargs, output)
        else:
            result = hook(self, args, output)
        return output if result is None else result

    # ------------------------------------------------------------------ hooks

    @staticmethod
    def _add_hook(
        table: OrderedDict, hook: Callable, prepend: bool, *options: tuple[dict, bool]
    ) -> RemovableHandle:
        """Store ``hook`` in ``table`` (first if ``prepend``) and its id in each option table
        whose flag is set."""
        handle = RemovableHandle(table, extra_dict=[t for t, _ in options])
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        for option, flag in options:
            if flag:
                option[handle.id] = True
        return handle

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; a non-None result replaces ``args``.
        With ``with_kwargs``: ``hook(module, args, kwargs)`` returning None or
        ``(args, kwargs)``. ``prepend`` runs it before the hooks already registered."""
        return self._add_hook(
            self._forward_pre_hooks,
            hook,
            prepend,
            (self._forward_pre_hooks_with_kwargs, with_kwargs),
        )

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) runs after ``forward``; a non-None result replaces ``output``.
        ``always_call`` runs it even when ``forward`` raises."""
        return self._add_hook(
            self._forward_hooks,
            hook,
            prepend,
            (self._forward_hooks_with_kwargs, with_kwargs),
            (self._forward_hooks_always_called, always_call),
        )

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients of the outputs are known; a
        non-None result (a tuple as long as ``grad_output``) replaces them."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the positional
        inputs are known (None for non-tensors and tensors without grad); a non-None result
        replaces ``grad_input``. All of a call's tensors that require grad, among its inputs
        and among its outputs, must share a dtype."""
        return self._add_hook(self._backward_hooks, hook, prepend)

    # ---------------------------------------------------------- registration

    def _check_name(self, kind: str, name: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if not name:
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Add ``param`` (or ``None``, a declared but absent parameter) under ``name``."""
        self._check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(tw.nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running stats); ``persistent=False``
        keeps it out of ``state_dict``."""
        self._check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(tw.Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Optional[Module]) -> None:
        """Add a child module under ``name`` (``None`` declares an absent child)."""
        self._check_name("module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, keep=self._parameters)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(tw.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Buffer):  # self.x = nn.Buffer(t): registered, as PyTorch 2.x
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._drop(name, keep=self._buffers)
            self.register_buffer(name, value, persistent=value.persistent)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, keep=self._modules)
            self._modules[name] = value
        elif params is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(tw.nn.Module or None expected)"
                )
            d["_modules"][name] = None
        elif params is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(tw.Tensor or None expected)"
                )
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _drop(self, name: str, keep: dict) -> None:
        """Forget ``name`` everywhere but in ``keep``, the store it is about to be set in
        (where it keeps its place in the order)."""
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            if store is not keep:
                store.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: registered entries are not in __dict__.
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            entries = d.get(store)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = list(super().__dir__())
        names += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(n for n in set(names) if not n[0].isdigit())

    # ------------------------------------------------------------- traversal

    def named_modules(
        self, memo: Optional[set] = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first, each once unless ``remove_duplicate``
        is False."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            child_prefix = f"{prefix}.{name}" if prefix else name
            yield from module.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        if recurse:
            owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            owners = iter([(prefix, self)])
        for owner_prefix, owner in owners:
            for name, value in getattr(owner, store).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield (f"{owner_prefix}.{name}" if owner_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs; a parameter shared by several modules appears once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target: str) -> Module:
        """The module at dotted path ``target`` (``""`` is this module)."""
        module = self
        if target == "":
            return module
        for part in target.split("."):
            child = module._modules.get(part)
            if not isinstance(child, Module):
                raise AttributeError(f"{module._get_name()} has no submodule `{part}`")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        owner_path, _, name = target.rpartition(".")
        owner = self.get_submodule(owner_path)
        if owner._parameters.get(name) is None:
            raise AttributeError(f"{owner._get_name()} has no parameter `{name}`")
        return owner._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        owner_path, _, name = target.rpartition(".")
        owner = self.get_submodule(owner_path)
        if owner._buffers.get(name) is None:
            raise AttributeError(f"{owner._get_name()} has no buffer `{name}`")
        return owner._buffers[name]

    # ----------------------------------------------------------------- modes

    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (default) or to zeros."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                with tw.no_grad():
                    param.grad.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------- device / dtype

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace every parameter's storage, its gradient and every buffer by ``fn`` of it.

        Parameters keep their identity (their storage is rebound) so that optimizers built
        before the move still update the module's tensors."""
        for module in self.children():
            module._apply(fn)
        with tw.no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param.data)
                if param.grad is not None:
                    param.grad = fn(param.grad)
            for name, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[name] = fn(buf)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device and/or cast floating point ones to a dtype:
        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``, or keywords."""
        device, dtype = _parse_to(*args, **kwargs)

        def convert(t: Tensor) -> Tensor:
            if dtype is not None and t.dtype.is_floating_point and t.dtype is not dtype:
                t = t.to(dtype)
            if device is not None and t.device != device:
                t = t.to(device)
            return t

        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Give every parameter and buffer new memory on ``device`` (zeros here: there is no
        uninitialised memory), as after ``meta``-device construction; ``recurse=False``:
        only this module's own."""

        def empty(t: Tensor) -> Tensor:
            return tw.zeros_like(t, device=device)

        if recurse:
            return self._apply(empty)
        with tw.no_grad():
            for param in self._parameters.values():
                if param is not None:
                    param.data = empty(param.data)
            for name, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[name] = empty(buf)
        return self

    def _cast(self, dtype: DType) -> Module:
        return self._apply(
            lambda t: t.to(dtype) if t.dtype.is_floating_point and t.dtype is not dtype else t
        )

    def float(self) -> Module:
        return self._cast(tw.float32)

    def double(self) -> Module:
        return self._cast(tw.float64)

    def half(self) -> Module:
        return self._cast(tw.float16)

    def bfloat16(self) -> Module:
        return self._cast(tw.bfloat16)

    def cpu(self) -> Module:
        """Move to a CPU: the current backend's own when it has one (as ``Tensor.cpu``)."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        """Move to a CUDA device of the torch backend (``device``: an index or spec)."""
        from tensorweaver.cuda import device_spec

        return self.to(device_spec(device))

    def type(self, dst_type: Any) -> Module:
        """Cast every parameter and buffer to ``dst_type`` (floating and integer alike)."""
        return self._apply(lambda t: t.type(dst_type))

    # ----------------------------------------------------------- state dict

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(
        self, destination: Optional[dict] = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, in registration order, detached
        unless ``keep_vars``."""
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        return destination

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """Copy this module's own entries out of ``state_dict``; record what does not fit."""
        persistent = {
            n: b for n, b in self._buffers.items() if n not in self._non_persistent_buffers_set
        }
        local = {
            k: v
            for k, v in itertools.chain(self._parameters.items(), persistent.items())
            if v is not None
        }
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                value = tw.as_tensor(value)
            if tuple(value.shape) != tuple(target.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{tuple(value.shape)} from checkpoint, the shape in current model is "
                    f"{tuple(target.shape)}."
                )
                continue
            with tw.no_grad():
                target.copy_(value.to(target.dtype).to(target.device))
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            head, dot, _ = key[len(prefix) :].partition(".")
            known = head in self._modules if dot else head in local
            if not known:
                unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> Any:
        """Copy parameters and buffers from ``state_dict`` into this module's own tensors.

        Returns ``(missing_keys, unexpected_keys)``. Raises ``RuntimeError`` listing every
        problem when a shape differs, or, with ``strict=True``, when a key is missing or
        unexpected."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"Expected state_dict to be dict-like, got {type(state_dict).__name__}."
            )
        state_dict = OrderedDict(state_dict)  # a copy: layers may fill in legacy keys
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        for prefix_, module in self.named_modules(remove_duplicate=False):
            prefix = f"{prefix_}." if prefix_ else ""
            module._load_from_state_dict(state_dict, prefix, missing, unexpected, errors)
        if strict:
            if unexpected:
                names = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {names}. ")
            if missing:
                names = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {names}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ repr

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr``; layers override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): {_addindent(repr(module), 2)}" for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"
