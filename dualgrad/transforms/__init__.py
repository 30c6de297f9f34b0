"""Function transforms built from the engines and the op table: ``torch.func``'s transforms (``func``),
custom autograd Functions (``function``) and the levels that decide which graph a finished transform
keeps (``levels``). The public namespaces are ``dualgrad.func`` and ``dualgrad.autograd``.
"""
