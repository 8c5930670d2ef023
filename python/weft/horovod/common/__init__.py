"""The framework-independent part of weft.horovod (see weft/horovod/__init__.py)."""
