"""Matern kernels over one distance matrix per input column, written into reused buffers.

The additive Gaussian process (:mod:`lineage.importance._additive_gp`) evaluates them for
every likelihood evaluation of its fit, so they work in place and return the derivative of
the log kernel with respect to the log length scale with the value.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Buffers", "matern", "matern_parts", "matern_product"]

_EXP_BLOCK = 8


class Buffers:
    """Work arrays for the kernel of ``columns`` x ``pairs`` distances."""

    def __init__(self, columns: int, pairs: int, groups: int, orders: int) -> None:
        shape = (columns, pairs)
        self.a, self.b = np.empty(shape), np.empty(shape)
        self.k, self.dk = np.empty(shape), np.empty(shape)  # additive orders' columns
        self.kp, self.dkp = np.empty(shape), np.empty(shape)  # the product term's columns
        self.g = np.empty((groups, pairs))
        self.t = np.empty((groups, pairs))
        self.e = np.empty((max(orders, 1), pairs))  # elementary symmetric polynomials of g
        self.u, self.v = np.empty(pairs), np.empty(pairs)
        self.p = np.empty(pairs)
        self.value = np.empty(pairs)


def matern_parts(nu: float, dist: np.ndarray, length: np.ndarray, buf: Buffers,
                  poly: np.ndarray, dlog: np.ndarray) -> bool:  # fmt: skip
    """The Matern kernel of each column's distances as ``poly * exp(-buf.a)``, and ``dlog`` =
    d log k / d log length. False when ``poly`` is 1 (then left unset)."""
    a, b = buf.a, buf.b
    if nu == 0.5:
        np.multiply(dist, (1.0 / length)[:, None], out=a)
        dlog[...] = a
        return False
    if nu == 1.5:
        np.multiply(dist, (np.sqrt(3.0) / length)[:, None], out=a)
        np.add(a, 1.0, out=poly)  # 1 + a
        np.multiply(a, a, out=dlog)
        dlog /= poly  # a^2 / (1 + a)
        return True
    if nu == 2.5:
        np.multiply(dist, (np.sqrt(5.0) / length)[:, None], out=a)
        np.multiply(a, a, out=b)
        b *= 1.0 / 3.0  # a^2 / 3
        np.add(a, 1.0, out=dlog)
        dlog *= b  # a^2 (1 + a) / 3
        np.add(a, 1.0, out=poly)
        poly += b  # 1 + a + a^2 / 3
        dlog /= poly
        return True
    # squared exponential
    np.multiply(dist, (1.0 / length)[:, None], out=b)
    np.multiply(b, b, out=dlog)
    np.multiply(dlog, 0.5, out=a)
    return False


def matern(nu: float, dist: np.ndarray, length: np.ndarray, buf: Buffers, k: np.ndarray,
            dlog: np.ndarray) -> None:  # fmt: skip
    """``k`` = Matern kernel of each column's distances; ``dlog`` = d log k / d log length."""
    has_poly = matern_parts(nu, dist, length, buf, k, dlog)
    np.negative(buf.a, out=buf.a)
    if has_poly:
        np.exp(buf.a, out=buf.a)
        k *= buf.a
    else:
        np.exp(buf.a, out=k)


def matern_product(nu: float, dist: np.ndarray, length: np.ndarray, buf: Buffers,
                    poly: np.ndarray, dlog: np.ndarray, out: np.ndarray) -> None:  # fmt: skip
    """``out`` = the product over columns of their Matern kernels; ``dlog`` as for
    :func:`matern`. One exponential per pair and block of columns, not one per column and
    pair: the exponentials were most of the fit's time (numpy has no vectorized float64 exp
    on AVX2 machines). Blocks of 8 keep the product of the polynomials (below 1e5 each at
    length scales of 0.01) far from overflowing."""
    has_poly = matern_parts(nu, dist, length, buf, poly, dlog)
    part, factor = buf.u, buf.v
    for start in range(0, dist.shape[0], _EXP_BLOCK):
        block = slice(start, start + _EXP_BLOCK)
        np.sum(buf.a[block], axis=0, out=part)
        np.negative(part, out=part)
        np.exp(part, out=part)
        if has_poly:
            np.prod(poly[block], axis=0, out=factor)
            part *= factor
        if start == 0:
            out[...] = part
        else:
            out *= part
