"""Monthly international airline passengers, January 1949 – December 1960 (Box & Jenkins series G).

The 144 published monthly totals (thousands of passengers) are facts, written out here so the
airline experiment of de Souza et al. (2021, Table 3) runs offline.
"""

import numpy as np

__all__ = ["load_airline"]

_PASSENGERS = (
    112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118,  # 1949
    115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140,  # 1950
    145, 150, 178, 163, 172, 178, 199, 199, 184, 162, 146, 166,  # 1951
    171, 180, 193, 181, 183, 218, 230, 242, 209, 191, 172, 194,  # 1952
    196, 196, 236, 235, 229, 243, 264, 272, 237, 211, 180, 201,  # 1953
    204, 188, 235, 227, 234, 264, 302, 293, 259, 229, 203, 229,  # 1954
    242, 233, 267, 269, 270, 315, 364, 347, 312, 274, 237, 278,  # 1955
    284, 277, 317, 313, 318, 374, 413, 405, 355, 306, 271, 306,  # 1956
    315, 301, 356, 348, 355, 422, 465, 467, 404, 347, 305, 336,  # 1957
    340, 318, 362, 348, 363, 435, 491, 505, 404, 359, 310, 337,  # 1958
    360, 342, 406, 396, 420, 472, 548, 559, 463, 407, 362, 405,  # 1959
    417, 391, 419, 461, 472, 535, 622, 606, 508, 461, 390, 432,  # 1960
)


def load_airline():
    """Monthly airline passenger totals, 1949-01 to 1960-12.

    Returns
    -------
    passengers : ndarray of shape (144,)
        Thousands of passengers per month, float64; index ``t = 0`` is January 1949.

    Examples
    --------
    >>> from sklearn_lvgp.datasets import load_airline
    >>> y = load_airline()
    >>> y.shape, y[0], y[-1]
    ((144,), 112.0, 432.0)
    """
    return np.array(_PASSENGERS, dtype=np.float64)
