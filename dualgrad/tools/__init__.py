"""Tools on top of the transforms: ``gradcheck``, ``testing`` (torch.testing), ``comparison``
(``assert_close``), ``graph`` (torch.autograd.graph) and ``printing`` (tensor reprs).
The public namespaces are ``dualgrad.testing``, ``dualgrad.graph`` and ``dualgrad.autograd``.
"""
