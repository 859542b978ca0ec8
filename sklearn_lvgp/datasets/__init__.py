"""Loaders for the papers' offline datasets.

The airline series (144 published numbers) is written out in the package. The other data are
never bundled or downloaded: the loaders read them from a ``shared/data`` folder (``../shared/data``
beside the repository, or the folder named by the ``SKLEARN_LVGP_DATA`` environment variable) and
raise :class:`FileNotFoundError` with a clear message when it is absent, so tests and examples can
skip cleanly.
"""

from ._airline import load_airline
from ._conditional import bimodal_conditional_log_density, make_bimodal_conditional
from ._loaders import (
    UCI_HL_DATASETS,
    data_home,
    load_oil_flow,
    load_uci_hl,
    load_usps,
    shuffle_test_mask,
    uci_hl_splits,
)
from ._moons import make_ldgd_moons
from ._synthetic_dvmgp import make_two_parabolas, two_parabolas_split

__all__ = ["UCI_HL_DATASETS", "bimodal_conditional_log_density", "data_home", "load_airline",
           "load_oil_flow", "load_uci_hl", "load_usps", "make_bimodal_conditional",
           "make_ldgd_moons", "make_two_parabolas", "shuffle_test_mask", "two_parabolas_split",
           "uci_hl_splits"]
