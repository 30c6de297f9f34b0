"""The functional API: jacobian, hessian, vjp, jvp, vhp, hvp (see the functional issue)."""
