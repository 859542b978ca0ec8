"""Likelihoods: variational expectations ``E_q[log p(y | f)]`` with their backward passes, and
predictive densities, moments and class probabilities.

Each likelihood is an object with scikit-learn-style hyperparameters, as the kernels have
(``theta`` in transformed space, bounds, ``"fixed"``, ``get_params``/``set_params``); see
:class:`Likelihood`. Regression: :class:`Gaussian`, :class:`StudentT`, :class:`Beta`,
:class:`Poisson`; classification: :class:`Bernoulli` (two classes), :class:`Ordinal` (ordered
classes), :class:`Softmax` and :class:`RobustMax` (one latent function per class).
"""

from ._base import Likelihood, LikelihoodVJP
from ._bernoulli import Bernoulli
from ._beta import Beta
from ._gaussian import Gaussian
from ._ordinal import Ordinal
from ._poisson import Poisson
from ._robust_max import RobustMax
from ._softmax import Softmax
from ._student_t import StudentT

__all__ = ["Likelihood", "LikelihoodVJP", "Gaussian", "StudentT", "Bernoulli", "Beta",
           "Ordinal", "Poisson", "Softmax", "RobustMax"]
