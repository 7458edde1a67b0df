"""The conformance kit: proof that a backend plugin honours the contract.

For plugin authors. With your plugin installed::

    pytest --pyargs tensorweaver.conformance --tw-backend NAME
    python -m tensorweaver.conformance --tw-backend NAME       # the same, always works

``NAME`` is your entry-point name or a device (``mylib:gpu:1``). The first form needs the
kit's pytest option, which the core registers as a ``pytest11`` plugin; where it is not
registered, add ``-p tensorweaver.conformance.pytest_plugin``. Extra pytest options work
as usual (``-x``, ``-k layer``, ``--collect-only -q`` to list the checks).

What it checks, each check with an id:

* ``packaging/*``: the entry point; that importing the plugin module imports no
  third-party library (compared in a fresh interpreter, after ``import tensorweaver``);
  that the plugin imports only ``tensorweaver.contract`` from the core; the API version
  handshake; well-formed device records; ``tw_diagnose``; that with the array library
  hidden (``BackendInfo.library`` is its import name) the hooks report it unavailable
  instead of raising; the backend object's surface and fused pairs; declared gaps. All
  but ``packaging/backend-object`` run without creating the backend, so they pass or
  fail on their own while ``tw_create_backend`` is still broken.
* ``primitive/<name>/defined``: one per required primitive, that the backend object has
  it. A plugin can be built one primitive at a time: the backend object is checked even
  when it lacks some, each missing one failing its ``defined`` check and the cases that
  call it (naming it), every other case running as usual.
* every case of ``tw check`` (:mod:`tensorweaver.check`): every primitive across its
  dtypes and with its array arguments in every layout the core hands a backend
  (transposed, stepped and broadcast views, empty, 0-d: see
  :mod:`tensorweaver.check.layouts`), NaN/inf, duplicate indices; the core's
  broadcasting, negative axes and views; host transfer; autograd; the composites
  (``fused_*`` against the core's decomposition, outputs and gradients), autograd and
  composites again with inputs and upstream gradients in those views; every layer.
  References are NumPy float64; gradients are also checked by finite differences. A
  wrong element of an elementwise primitive is shown with its operands; a composite's
  failure says whether its ``fused_<name>`` kernel or the core's decomposition ran.
* ``widening/<primitive>/<dtype>``: every primitive in every dtype it admits (bool to
  complex128), each in every layout above and in flipped (negative strides), flipped and
  stepped, innermost-broadcast, channels-last, long (vectorised loops) and host-wrapped
  (Fortran-ordered, stepped and broadcast NumPy arrays) layouts, on extreme values too
  (integer wraparound, int64 beyond float64, float overflow and subnormals)
  (:mod:`tensorweaver.conformance.widening`; the kit runs these, ``tw check`` does not).
* ``rng_state/*``: the optional random stream states (``get_rng_state``/``set_rng_state``,
  API 2.5; skipped without them): a state repeats every draw after it bit for bit, fused
  dropout's too, reading one leaves the stream alone, and ``tw.random.fork_rng`` puts the
  device's stream back (:mod:`tensorweaver.check.cases.rng_state`; ``tw check`` runs them too).

Known gaps go in one place, the plugin module's ``conformance_gaps`` dict (see
:mod:`tensorweaver.conformance.gaps`); they are reported as expected failures. An exact
id must fail; a glob (``"primitive/remainder/*"``, the way to declare a primitive not
written yet) covers the checks it matches that fail and lets the others pass. A plugin
that passes with none is *conformant*; the last line of the run says which.

``tw check --backend NAME --jobs N`` runs the same cases in N processes (a JIT-compiling
backend pays its compilation in each); the kit itself runs in one process.
"""
