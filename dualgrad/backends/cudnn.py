"""``torch.backends.cudnn``: not used by dualgrad; its flags may be set and change nothing."""

__all__ = ["benchmark", "deterministic", "enabled", "is_available"]

enabled = True
benchmark = False
deterministic = False


def is_available() -> bool:
    """False: dualgrad computes on the CPU."""
    return False
