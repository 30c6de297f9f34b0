"""Forward-mode AD: dual tensors and dual levels (see the forward-mode issue)."""
