"""The version of the backend contract (kept apart so reading it does not import pluggy)."""

#: The contract version this core speaks, ``(MAJOR, MINOR)``. A plugin that declares
#: ``api_version`` ``"M.m"`` is accepted when ``M == MAJOR`` and ``m <= MINOR``:
#: minor versions only add optional things, a major version changes the contract.
API_VERSION: tuple[int, int] = (2, 13)
