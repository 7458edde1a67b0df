"""The hooks a TensorWeaver backend plugin implements — the plugin author's manual.

A plugin is a module registered under the entry-point group ``tensorweaver.backends``;
the entry-point name is the backend's name (``[a-z][a-z0-9_]*``)::

    [project.entry-points."tensorweaver.backends"]
    mylib = "tensorweaver_mylib.plugin"

The module implements the four hooks below with :data:`hookimpl`::

    from tensorweaver.contract import hookimpl

    @hookimpl
    def tw_backend_info():
        return BackendInfo(name="mylib", version="1.0", api_version="2.7", ...)

Rules the core relies on:

* **Importing the module is cheap.** The core imports it when the backend is first
  used or listed; import your array library inside the hooks (or in a second module
  that ``tw_create_backend`` imports), never at the top of the plugin module.
* **Hooks answer, they do not raise**, for an environment problem: a missing library
  is a device with status ``unavailable`` and a :class:`~.records.Problem` from
  ``tw_diagnose``. An exception from a hook marks the whole plugin ``error``.
* **The data plane is not pluggy.** ``tw_create_backend`` returns a backend object;
  tensors call its methods (one per primitive in :mod:`tensorweaver.contract.ir`)
  directly, so a hook is called once per process, never once per op.

The core calls each plugin's hooks in isolation (its own plugin manager), so one
broken plugin never affects another.
"""

from __future__ import annotations

import pluggy

from tensorweaver.contract.api import API_VERSION
from tensorweaver.contract.records import BackendInfo, DeviceRecord, Problem

PROJECT = "tensorweaver"
__all__ = ["API_VERSION", "PROJECT", "hookimpl", "hookspec"]


hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def tw_backend_info() -> BackendInfo:
    """Say what the backend is: name, version, API version, library, pip command.

    Must not import the array library: it is called at discovery, for
    ``tw --version`` and ``tw devices``. The ``api_version`` is checked against
    :data:`API_VERSION` before any other hook is called.
    """


@hookspec(firstresult=True)
def tw_devices(probe: bool) -> list[DeviceRecord]:
    """List the devices this backend can see, best first.

    The first ``available`` record is what ``backend`` alone selects. With
    ``probe=False`` (``tw devices``) answer cheaply: a backend whose library costs
    seconds or fixes process-wide state when imported (Legate starts its runtime)
    returns records with status ``not-probed`` instead of importing it. With
    ``probe=True`` (selecting a device, ``tw devices --probe``) look for real.
    A library that is not installed gives a record with status ``unavailable`` whose
    detail says so and names the install command.

    A device that exists whenever the library is installed (the CPU of a CPU library) is
    ``available`` with ``probe=False`` too: find the library with
    ``importlib.util.find_spec``, without importing it, even when the import costs seconds
    (JAX, TensorFlow); the import is paid in ``tw_create_backend``. Answer ``not-probed``
    only for devices that only the library or its runtime can find (how many GPUs, whether
    the driver works), or where importing it fixes process-wide state (Legate).
    """


@hookspec(firstresult=True)
def tw_diagnose() -> list[Problem]:
    """Say what is wrong with the environment for this backend, each with its fix, and
    what ``tw doctor`` should tell about it.

    Return a list of :class:`~.records.Problem` and :class:`~.records.Diagnosis`
    records (an empty list: nothing to say). A ``Problem``, or a ``Diagnosis`` of
    severity ``warning`` or ``error``, is something wrong: it is quoted when a selection
    of this backend fails, so say in ``fix`` the command that repairs it. A
    ``Diagnosis`` of severity ``ok`` or ``info`` is a finding that only ``tw doctor``
    shows: the library's version and build, what limits the devices this backend could
    use (a CPU-only build on a machine with a GPU driver) and its thread settings. Give
    each a short ``subject`` (``torch build``, ``threads``); ``tw doctor`` prints it
    beside the backend's name. Order: the library first, then devices, then settings.

    Rules:

    * **Cheap and harmless**: no device is created and no runtime started (no CUDA
      context, no Legate runtime). Import the array library only where that fixes no
      process-wide state (torch may be imported, legate may not); otherwise read
      package metadata or facts the plugin can find without it.
    * **A helper program** (``nvidia-smi``) is found with :func:`shutil.which` and run
      with a timeout of a few seconds; that it is missing, fails or hangs is a finding.
    * **Never raise.** The core reports a hook that raises as an ``error`` diagnosis of
      the plugin itself, with the exception, and goes on with the other plugins.
    """


@hookspec(firstresult=True)
def tw_create_backend(device: DeviceRecord) -> object:
    """Create the backend object for ``device`` (one of the records from ``tw_devices``).

    The object implements every primitive of :mod:`tensorweaver.contract.ir` as a
    method, and has the attributes ``device`` (the record) and ``dtypes`` (a
    frozenset of the :mod:`~tensorweaver.contract.dtypes` it supports). It may also
    define the optional methods of :data:`tensorweaver.contract.ir.OPTIONAL`, each
    added in a minor API version (2.1: ``max_ndim``, ``set_num_threads``; 2.2: memory
    shared with host NumPy arrays, ``wrap_host``, ``host_view``, ``write_into``,
    ``storage``, ``layout``; 2.3: special functions and linear algebra; 2.4: complex
    numbers, Fourier transforms, ``tril``/``triu``, ``linalg_eig``, the ``foreach_*``
    optimizer steps and ``compile_graph``; 2.5: ``get_rng_state``/``set_rng_state``, the
    state of the backend's random stream as bytes; 2.6: torch.special's functions without a
    gradient, ``airy_ai``, the Bessel functions of integer order and the orthogonal
    polynomials; 2.7: ``owns_memory`` and ``foreach_inplace``, optimizer updates written
    into the parameters' own memory; 2.8: ``nll_loss`` and ``nll_loss_backward``; 2.9:
    ``aminmax``, both extremes of an array at once; 2.10: ``host_aminmax``, both read back
    as Python numbers in one call, and ``strides``, layout's without the address; 2.11:
    ``select`` and ``split``, views cut along one axis in one call; 2.12: ``memory_users``,
    which lets the core write into a base with many live views instead of rereading each
    view, see its entry in ``OPTIONAL`` before defining it; 2.13: ``rebind_linalg_input``,
    a ``linalg_function`` record's input that a write through ``.data`` replaced); a plugin
    that declares an older minor version may define them too, since the core looks each one
    up, and a backend lacking one still gets the right answer (the core's decomposition, or
    NumPy on the host with one ``HostFallbackWarning``), except that without the 2.5 pair
    the core can only reseed its stream where it must put it back (``fork_rng``,
    ``checkpoint``), and warns.
    Listing ``complex64``/``complex128`` in ``dtypes`` promises the complex primitives
    (``real``, ``imag``, ``conj``, ``complex``) and complex arrays in the arithmetic
    primitives (see the IR table). The core creates one object per device and keeps it for
    the life of the process. Raise ``RuntimeError`` with a message that says how to fix it
    when the device cannot be used after all.

    A process-wide library setting that must be fixed before the first array exists (JAX's
    ``jax_enable_x64``, which float64 and int64 need) is set here, before creating any array,
    never when the plugin module is imported. Say in the plugin's README which settings it
    changes, since they affect the rest of the process too. Where the setting can no longer
    be changed (an earlier import fixed it), list in ``dtypes`` only the dtypes the device
    then has, and return from ``tw_diagnose`` a ``Problem`` naming the setting and its fix.
    """
