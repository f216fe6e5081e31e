"""Per-chip sub-builds: the chip catalog, the kernel_config.py writer, the manifest and the
file-system helpers that keep every output tree atomic and deterministic.
"""
