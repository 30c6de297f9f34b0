"""The vmap engine: batched tensors (``batching``) and the identity bases of Jacobians (``identity_basis``).

Like the reverse and forward engines it knows no op: ops register their batching rules into it.
The public ``vmap`` is ``dualgrad.vmap`` / ``dualgrad.func.vmap``.
"""
