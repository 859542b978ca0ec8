"""Datasets: generators, the airline series, and fetchers of the papers' data sets.

The airline series (144 published numbers) is written out in the package. The other data sets
(oil flow, USPS, UCI regression sets with their published splits) are downloaded from their
public sources on first use, as :mod:`sklearn.datasets` does, converted to one canonical file
each and cached in ``~/sklearn_lvgp_data`` (or ``$SKLEARN_LVGP_DATA``, or ``data_home=``).
Every cached file is checked against SHA-256 digests recorded in the package each time it is
read: a pre-filled folder with the same layout (such as the project's ``shared/data``) works as
the cache, offline, with ``download_if_missing=False``. ``_base.py`` describes the design.
"""

from ._airline import load_airline
from ._base import clear_data_home, get_data_home
from ._conditional import bimodal_conditional_log_density, make_bimodal_conditional
from ._fetchers import fetch_oil_flow, fetch_uci, fetch_usps
from ._loaders import (
    data_home,
    load_oil_flow,
    load_uci_hl,
    load_usps,
    shuffle_test_mask,
    uci_hl_splits,
)
from ._moons import make_ldgd_moons
from ._outliers import add_target_outliers
from ._registry import UCI_HL_DATASETS, UCI_RAW_DATASETS, UCI_WILSON_DATASETS
from ._synthetic_dvmgp import make_two_parabolas, two_parabolas_split

__all__ = ["UCI_HL_DATASETS", "UCI_RAW_DATASETS", "UCI_WILSON_DATASETS",
           "add_target_outliers", "bimodal_conditional_log_density", "clear_data_home",
           "data_home", "fetch_oil_flow", "fetch_uci", "fetch_usps", "get_data_home",
           "load_airline", "load_oil_flow", "load_uci_hl", "load_usps",
           "make_bimodal_conditional", "make_ldgd_moons", "make_two_parabolas",
           "shuffle_test_mask", "two_parabolas_split", "uci_hl_splits"]
