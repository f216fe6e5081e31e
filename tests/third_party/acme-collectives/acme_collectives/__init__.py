"""Acme's collective builtin packages for pypto-build (data only: manifests and templates)."""
