"""``torch.backends.mps``: Apple's GPUs are not used by dualgrad."""

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: dualgrad computes on the CPU."""
    return False


def is_built() -> bool:
    """False: dualgrad computes on the CPU."""
    return False
