"""The framework-independent part of weft.horovod (weft/horovod/__init__.py)."""
