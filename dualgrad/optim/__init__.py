"""Optimizers and learning-rate schedules with torch.optim's names, arguments and formulas.

>>> import dualgrad as dg
>>> w = dg.tensor([3.0], requires_grad=True)
>>> opt = dg.optim.SGD([w], lr=0.25)
>>> for _ in range(3):
...     opt.zero_grad()
...     loss = (w ** 2).sum()
...     loss.backward()
...     opt.step()
>>> w
tensor([0.3750], requires_grad=True)
"""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["LBFGS", "SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
