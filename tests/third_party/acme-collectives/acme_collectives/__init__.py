"""Acme's collective builtin packages for pypto-build: manifests and templates, and the contract
and launch-width rule of ring_shift (``ring_code.py``)."""
