"""The whole suite's root: its folder is on ``sys.path``, so every test folder can import
:mod:`tw_backends`, the one place that says how a test enters a backend."""
