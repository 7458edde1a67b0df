"""Fails at import, as a plugin whose own dependency is missing does."""

import a_module_that_does_not_exist  # noqa: F401
