"""``tw.return_types``: the named tuples of ``(values, indices)`` (and ``aminmax``'s
``(min, max)``, ``histogram``'s ``(hist, bin_edges)``, ``frexp``'s ``(mantissa, exponent)``)
that ops return, one class per op and printed as PyTorch prints its
``torch.return_types`` structseqs."""

from __future__ import annotations

from collections import namedtuple


def _structseq(name: str, fields: tuple[str, ...]) -> type:
    def __repr__(self: tuple) -> str:
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(self._fields, self))
        return f"tensorweaver.return_types.{name}(\n{body})"

    base = namedtuple(name, fields)
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})


_PAIR = ("values", "indices")
max = _structseq("max", _PAIR)
min = _structseq("min", _PAIR)
sort = _structseq("sort", _PAIR)
topk = _structseq("topk", _PAIR)
kthvalue = _structseq("kthvalue", _PAIR)
median = _structseq("median", _PAIR)
nanmedian = _structseq("nanmedian", _PAIR)
mode = _structseq("mode", _PAIR)
cummax = _structseq("cummax", _PAIR)
cummin = _structseq("cummin", _PAIR)
aminmax = _structseq("aminmax", ("min", "max"))
histogram = _structseq("histogram", ("hist", "bin_edges"))
histogramdd = _structseq("histogramdd", ("hist", "bin_edges"))
frexp = _structseq("frexp", ("mantissa", "exponent"))
