# ruff: noqa: E501 - each reason is one line of the difference found
"""The differences from torch that ``test_opinfo_sweep.py`` knows of, by op (``name`` or
``name.variant``): each reason is the first difference the suite's share found. Regenerate
with ``python tests/opinfo/triage.py --known`` after fixing one, and read the diff."""

#: Why a known difference stays (kept by ``--known``; the reason's prefix in the suite).
WHY: dict[str, str] = {
    "as_strided_scatter": "torch's gradient is the wrong one (torch.autograd.gradcheck fails "
    "on torch's own op); ours agrees with finite differences: ",
    "special.bessel_j0": "torch's float64 kernel is off by ~7e-6 relative near zeros; ours "
    "agrees with SciPy and mpmath to 1e-15: ",
    "special.bessel_y1": "torch's float64 kernel is off by ~7e-6 relative near zeros; ours "
    "agrees with SciPy and mpmath to 1e-15: ",
    "bfloat16": "the NumPy backend has no bfloat16 (torch:cpu and cuPyNumeric do): ",
    "chalf": "tensorweaver has no complex32: ",
    "to_sparse": "tensorweaver has no sparse layouts: ",
}

KNOWN: dict[str, str] = {
    "_batch_norm_with_update": "function float64 #0 missing: function _batch_norm_with_update",
    "_chunk_cat": "function float64 #0 missing: function _chunk_cat",
    "_native_batch_norm_legit": "function float64 #0 missing: function _native_batch_norm_legit",
    "_segment_reduce.lengths": "function float64 #0 missing: function _segment_reduce",
    "_segment_reduce.offsets": "function float64 #0 missing: function _segment_reduce",
    "_softmax_backward_data": "function float64 #0 missing: function _softmax_backward_data",
    "_unsafe_masked_index": "function float64 #0 missing: function _unsafe_masked_index",
    "_unsafe_masked_index_put_accumulate": "function float64 #0 missing: function _unsafe_masked_index_put_accumulate",
    "_upsample_bilinear2d_aa": "function float64 #0 missing: function _upsample_bilinear2d_aa",
    "as_strided_scatter": "function float64 #0 grad: grad[0][0]: 0.0, torch 1.4700530018065532 (1/1 differ)",
    "bfloat16": "function float64 #0 raises: TypeError: to(bfloat16): the numpy:cpu:0 device has no bfloat16; it supports bool, complex128, complex64, float16, float32, float64, int16, int32, int64, int8, uint8",
    "chalf": "function float64 #0 raises: AttributeError: 'Tensor' object has no attribute 'chalf'",
    "empty_permuted": "function float64 #0 missing: function empty_permuted",
    "grid_sampler_2d": "function float64 #0 missing: function grid_sampler_2d",
    "grid_sampler_3d": "function float64 #0 missing: function grid_sampler_3d",
    "hash_tensor": "function float64 #0 missing: function hash_tensor",
    "jiterator_2inputs_2outputs": "function float64 #0 missing: function jiterator_2inputs_2outputs",
    "jiterator_4inputs_with_extra_args": "function float64 #0 missing: function jiterator_4inputs_with_extra_args",
    "jiterator_binary": "function float64 #0 missing: function jiterator_binary",
    "jiterator_binary_return_by_ref": "function float64 #0 missing: function jiterator_binary_return_by_ref",
    "jiterator_unary": "function float64 #0 missing: function jiterator_unary",
    "native_batch_norm": "function float64 #0 missing: function native_batch_norm",
    "native_dropout_backward": "function float64 #0 missing: function native_dropout_backward",
    "native_group_norm": "function float64 #0 missing: function native_group_norm",
    "native_layer_norm": "function float64 #0 missing: function native_layer_norm",
    "slice": "function float64 #0 missing: function slice",
    "sparse.mm.reduce": "function float64 #0 missing: function sparse.mm",
    "sparse.sampled_addmm": "function float64 #0 missing: function sparse.sampled_addmm",
    "special.bessel_j0": "function float64 #0 value: out[6]: -0.03378131278826052, torch -0.03378150176924146 (3/20 differ)",
    "special.bessel_y1": "function float64 #0 value: out[10]: -0.048985993321099396, torch -0.048986314316868666 (1/20 differ)",
    "to_sparse": "function float64 #0 raises: AttributeError: 'Tensor' object has no attribute 'to_sparse'",
    "torch.ops.aten._safe_softmax.default": "function float64 #0 missing: function torch.ops.aten._safe_softmax.default",
}
