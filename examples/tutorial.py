"""The torch.autograd tutorial, run with dualgrad (``import dualgrad as dg`` in place of torch).

It prints what the tutorial prints; after ``out.backward()``, ``x.grad`` is all 4.5.
Run it with ``python examples/tutorial.py``.
"""

import dualgrad as dg

dg.manual_seed(0)

# Create a tensor and set requires_grad=True to track computation with it.
x = dg.ones(2, 2, requires_grad=True)
print(x)
print(x.data)
print(x.grad)
print(x.grad_fn)  # we've created x ourselves

# Do an operation on x: y was created by an operation, so it has a grad_fn.
y = x + 2
print(y)
print(y.grad_fn)

# More operations on y.
z = y * y * 3
out = z.mean()
print(z, out)

# .requires_grad_( ... ) changes an existing tensor's requires_grad flag in place.
a = dg.randn(2, 2)
a = (a * 3) / (a - 1)
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)

# Gradients: d(out)/dx.
out.backward()
print(x.grad)

# retain_graph=True keeps the graph's buffers for a second backward.
x = dg.ones(2, 2, requires_grad=True)
y = x + 2
y.backward(dg.ones(2, 2), retain_graph=True)
print(x.grad)
z = y * y
print(z)

# Backpropagate random gradients through y a second time.
gradient = dg.randn(2, 2)
y.backward(gradient)
print(x.grad)

# Stop tracking history with no_grad.
print(x.requires_grad)
print((x ** 2).requires_grad)
with dg.no_grad():
    print((x ** 2).requires_grad)
