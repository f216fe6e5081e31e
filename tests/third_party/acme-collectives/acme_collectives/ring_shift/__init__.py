"""ring_shift builtin package: ``builtin.toml`` and ``templates/``, read by pypto-build."""
