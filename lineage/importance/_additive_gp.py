"""A Gaussian-process regressor with an additive kernel, for the importance surrogate.

The kernel, over parameters ``g`` (a numeric parameter is one input column, a categorical its
one-hot block) with one Matern kernel ``k_c`` per column::

    k(x, x') = s1 * sum_g k_g  +  s2 * sum_{g < h} k_g k_h  +  s3 * prod_c k'_c  +  noise
    k_g = prod_{c in g} k_c

The first two terms are the additive kernels of orders 1 and 2 of Duvenaud, Nickisch and
Rasmussen ("Additive Gaussian processes", 2011): main effects and pairwise interactions, one
length scale per column shared by both orders. The third is the anisotropic product kernel
(automatic relevance determination) with length scales of its own, for interactions of
higher order. Each order's variance is fitted, so the data decide how much of each there is.

Why not the product kernel alone: it has one length scale per column for the whole function,
so a parameter with a wiggly effect (a sine over its range) needs a short one, and a short
length scale in any column decorrelates every pair of runs. With 160 training runs the fit
then either smooths that effect away or all the others, and leaves the rest as noise: on
``bench_importance.py``'s ``geometric2`` (seven smooth effects down to 1.15% of the variance,
three pairwise products) its held-out R² was 0.93-0.96, and the 1.15% effect was lost in a
noise term several times its size. Responses made of main effects and a few interactions,
which is what hyperparameter responses mostly are, are what the additive orders fit with
few runs: held-out R² 0.999 on the same runs, and the weakest effect modelled.

A parameter with no effect still has a place to go: at the upper bound of its length scales
``k_c`` is 1 for every pair of runs and the column drops out of every term.

Hyper-parameters (log length scales, order variances, noise) maximize the log marginal
likelihood plus a sparsity prior on the length scales (see ``_LENGTH_PRIOR``), by L-BFGS-B
with the analytic gradient. Each fit starts from the same point, whatever the runs (see
:class:`AdditiveGaussianProcess`). The kernel is evaluated on the upper triangle of the
training pairs into buffers allocated once per fit: a fresh array per evaluation costs page
faults, which made the fit several times slower on the 2-core development machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lineage.importance._matern import Buffers, matern, matern_parts, matern_product

__all__ = ["KERNELS", "NUS", "AdditiveGaussianProcess"]

KERNELS = ("additive", "product")
NUS = (0.5, 1.5, 2.5, float("inf"))

LENGTH_SCALE_BOUNDS = (1e-2, 1e3)
"""On inputs scaled to [0, 1]: at the upper end a column is flat, a no-effect parameter's
answer."""
_VARIANCE_BOUNDS = (1e-6, 1e4)  # of each order, on the standardized target
_NOISE_BOUNDS = (1e-8, 1.0)
_LENGTH_PRIOR = 10.0
"""Scale of the half-Cauchy prior on each inverse squared length scale ``1 / l**2`` (the
sparsity prior of Eriksson and Jankowiak's SAAS, "High-dimensional Bayesian optimization with
sparse axis-aligned subspaces", 2021, at a fixed scale): the hyper-parameters maximize the
marginal likelihood plus this log prior. It costs a length scale of a third of the range
0.6 nats, one of a tenth 4.6, and nothing near the upper bound. Without it, on noisy
targets a no-effect parameter's length scales dropped to the lower bound and fitted the
noise run by run, and ``significant`` flagged no-effect parameters in 5.8% of cases at 60-100
runs (nominal 2.5%); with it 3.8%, with the same power and the same rankings on every
known-truth case (``bench_importance.py``). A scale of 0.3 cut it to 2.7% but ranked
Ishigami's two strongest parameters the wrong way round in one seed of five (1 and 3: the
same miss, and no lower rate than 10)."""
_MAX_ITER = 300
_FTOL = 1e-5
"""L-BFGS-B stops when an iteration improves the objective by less than this share of it
(scipy's default is 2.2e-9). The objective is a few hundred nats at 200 runs, so this stops at
steps of a few thousandths of a nat, differences no held-out score can see: on
``bench_importance.py``'s geometric and geometric2 it halved the likelihood evaluations
(1,200-1,350 to 580-700 per analysis) and moved no held-out R² by more than 2e-4."""
_CHUNK = 4000  # kernel entries per row block when predicting, times the training runs


class AdditiveGaussianProcess:
    """Gaussian-process regression on inputs scaled to [0, 1] by the training runs, target
    standardized, kernel as in the module docs: additive orders 1 to ``orders`` plus the
    product term (``orders=0``: the product term alone).

    The search starts from the same point whatever the runs (every length scale 0.5), plus
    ``n_restarts`` random starting points (from ``random_state``). Nothing carries over from
    one fit to the next: a fit started where another fold's fit ended would inherit
    hyper-parameters tuned to the runs it now holds out (see
    :class:`~lineage.importance.GaussianProcessImportance`).
    """

    def __init__(
        self,
        groups: list[np.ndarray],
        *,
        orders: int = 2,
        nu: float = 2.5,
        n_restarts: int = 0,
        random_state: int = 0,
    ) -> None:
        self.groups = [np.asarray(g) for g in groups]
        self.orders = orders
        self.nu = nu
        self.n_restarts = n_restarts
        self.random_state = random_state

    # theta = log of: length scales of the additive orders (one per column), of the product
    # term (one per column), the variances of orders 1..R, of the product term, the noise.

    def _unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
        c, r = self.n_columns_, self.r_
        v = np.exp(theta[2 * c :])
        return np.exp(theta[:c]), np.exp(theta[c : 2 * c]), v[:r], float(v[r]), float(v[r + 1])

    def _bounds(self) -> list[tuple[float, float]]:
        c, r = self.n_columns_, self.r_
        length = tuple(np.log(LENGTH_SCALE_BOUNDS))
        var = tuple(np.log(_VARIANCE_BOUNDS))
        # The product kernel alone: the additive length scales pinned, unused.
        additive = [length] * c if self.orders else [(0.0, 0.0)] * c
        return [*additive, *[length] * c, *[var] * (r + 1), tuple(np.log(_NOISE_BOUNDS))]

    def _start(self, rng: np.random.Generator, attempt: int) -> np.ndarray:
        c, r = self.n_columns_, self.r_
        if attempt == 0:
            length = np.full(c, 0.5)
        else:
            length = np.exp(rng.uniform(np.log(0.2), np.log(5.0), c))
        theta = np.concatenate(
            [np.log(length), np.log(length), np.log(np.full(r + 1, 0.3)), [np.log(1e-2)]]
        )
        return np.clip(theta, *np.array(self._bounds()).T)

    def _kernel(self, dist: np.ndarray, buf: Buffers, theta: np.ndarray) -> np.ndarray | None:
        """Off-diagonal kernel values into ``buf.value``; the group kernels (``None`` for the
        product kernel alone), with ``buf.e`` set for the gradient."""
        length, plength, _, _, _ = self._unpack(theta)
        matern_product(self.nu, dist, plength, buf, buf.kp, buf.dkp, buf.p)
        if self.orders:
            self._training_columns(length, buf)
        return self._combine(buf, theta)

    def _training_columns(self, length: np.ndarray, buf: Buffers) -> None:
        """:func:`matern` of the training pairs into ``buf.k`` and ``buf.dk``, with two
        exponentials per run and column instead of one per pair: ``exp(-s |x_i - x_j|)`` is
        ``exp(-s x_hi) exp(s x_lo)``, looked up. On inputs in [0, 1] and length scales of at
        least 0.01 neither factor comes near overflow (below 1e98), and the product's relative
        error stays below 1e-13, far under the noise floor of the kernel matrix."""
        has_poly = matern_parts(self.nu, self.dist_, length, buf, buf.k, buf.dk)
        if self.nu == float("inf"):  # exp(-d^2 / 2 l^2) does not factor so
            np.negative(buf.a, out=buf.a)
            np.exp(buf.a, out=buf.k)
            return
        slope = (np.sqrt(2.0 * self.nu) / length)[:, None] * self.X_.T
        np.take(np.exp(-slope), self.far_, out=buf.a.reshape(-1), mode="clip")
        np.take(np.exp(slope), self.near_, out=buf.b.reshape(-1), mode="clip")
        buf.a *= buf.b
        if has_poly:
            buf.k *= buf.a
        else:
            buf.k[...] = buf.a

    def _combine(self, buf: Buffers, theta: np.ndarray) -> np.ndarray | None:
        """:meth:`_kernel` from the columns' kernels in ``buf.k`` and their product term's
        in ``buf.p``."""
        _, _, s, sp, _ = self._unpack(theta)
        value = buf.value
        np.multiply(buf.p, sp, out=value)
        if not self.orders:
            return None
        if self.single_:
            g = buf.k
        else:
            g = buf.g
            for j, cols in enumerate(self.groups):
                np.prod(buf.k[cols], axis=0, out=g[j])
        # Elementary symmetric polynomials e_r of the group kernels (the sums over all sets of
        # r parameters of their kernels' product) by Newton's identities from the power sums.
        e, t, power, scratch = buf.e, buf.t, buf.u, buf.v
        np.sum(g, axis=0, out=e[0])
        if self.orders >= 2:
            np.multiply(g, g, out=t)
            np.sum(t, axis=0, out=power)  # p2
            np.multiply(e[0], e[0], out=e[1])
            e[1] -= power
            e[1] *= 0.5
        if self.orders >= 3:
            np.multiply(e[0], power, out=scratch)  # e1 p2
            t *= g
            np.sum(t, axis=0, out=power)  # p3
            np.multiply(e[1], e[0], out=e[2])
            e[2] -= scratch
            e[2] += power
            e[2] *= 1.0 / 3.0
        for r in range(self.orders):
            np.multiply(e[r], s[r], out=scratch)
            value += scratch
        return g

    def _diagonal(self, theta: np.ndarray) -> float:
        from math import comb

        _, _, s, sp, noise = self._unpack(theta)
        ng = len(self.groups)
        return sum(s[r] * comb(ng, r + 1) for r in range(self.orders)) + sp + noise

    def _neg_log_likelihood(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        from math import comb

        from scipy.linalg import lapack

        n, c, ng, r = self.n_, self.n_columns_, len(self.groups), self.r_
        buf = self.buf_
        g = self._kernel(self.dist_, buf, theta)
        # Only the lower triangle: the Cholesky factor and the inverse read and write no other.
        # Flat indices into the column-major buffer are faster than index pairs.
        K = self.gram_
        flat = K.T.reshape(-1)
        flat[self.lower_flat_] = buf.value
        flat[:: n + 1] = self._diagonal(theta) * (1.0 + 1e-10)
        L, info = lapack.dpotrf(K, lower=1, overwrite_a=1, clean=0)
        if info != 0:
            return 1e25, np.zeros_like(theta)
        alpha, _ = lapack.dpotrs(L, self.y_, lower=1)
        value = 0.5 * float(self.y_ @ alpha) + float(np.log(np.diag(L)).sum())
        inverse, _ = lapack.dpotri(L, lower=1, overwrite_c=1)
        # dL/dtheta = 1/2 sum((alpha alpha' - K^-1) * dK/dtheta): w holds that matrix on the
        # off-diagonal pairs (each counted twice, which cancels the 1/2), trace its diagonal.
        outer = self.outer_
        np.multiply.outer(alpha, alpha, out=outer)
        outer -= inverse
        w = outer.T.reshape(-1)[self.lower_flat_]
        trace = float(alpha @ alpha - np.trace(inverse))
        _, _, s, sp, noise = self._unpack(theta)
        grad = np.zeros_like(theta)
        buf.p *= w
        grad[c : 2 * c] = sp * (buf.dkp @ buf.p)
        grad[2 * c + r] = sp * (buf.p.sum() + 0.5 * trace)
        grad[2 * c + r + 1] = 0.5 * noise * trace
        if g is not None:
            e, t = buf.e, buf.t
            for q in range(r):
                grad[2 * c + q] = s[q] * (float(w @ e[q]) + 0.5 * trace * comb(ng, q + 1))
            # d e_q / d g = e_{q-1} - g e_{q-2} + g^2 e_{q-3}..., so the sum over orders is
            # a0 - g (a1 - g a2) with a0 = s1 + s2 e1 + s3 e2, a1 = s2 + s3 e1, a2 = s3.
            if r == 1:
                t.fill(s[0])
            else:
                a0, a1 = buf.u, buf.v
                np.multiply(e[0], s[1], out=a0)
                a0 += s[0]
                if r >= 3:
                    a0 += s[2] * e[1]
                    np.multiply(e[0], s[2], out=a1)
                    a1 += s[1]
                    np.multiply(g, s[2], out=t)
                    np.subtract(a1, t, out=t)
                else:
                    t[...] = s[1]
                t *= g
                np.subtract(a0, t, out=t)
            t *= g  # d k_g / d log l_c = k_g dlog_c
            t *= w
            grad[:c] = np.einsum("ct,ct->c", t if self.single_ else t[self.group_of_], buf.dk)
        # The prior: minus log of a half-Cauchy density of 1 / l^2, up to a constant.
        lengths = slice(0 if self.orders else c, 2 * c)
        q = np.exp(-2.0 * theta[lengths]) / _LENGTH_PRIOR
        q *= q
        value += float(np.log1p(q).sum())
        grad[lengths] += 4.0 * q / (1.0 + q)
        return value, -grad

    def _prepare(self, X: np.ndarray, y: np.ndarray) -> None:
        """The scaled runs and the work arrays of the search (dropped again once fitted)."""
        n, c = X.shape
        self.n_, self.n_columns_, self.r_ = n, c, max(self.orders, 1)
        self.single_ = all(len(g) == 1 for g in self.groups)
        self.group_of_ = np.zeros(c, dtype=int)
        for j, cols in enumerate(self.groups):
            self.group_of_[cols] = j
        self.low_ = X.min(axis=0)
        span = X.max(axis=0) - self.low_
        self.span_ = np.where(span > 0, span, 1.0)
        self.X_ = (X - self.low_) / self.span_
        self.mean_, self.scale_ = float(y.mean()), float(y.std()) or 1.0
        self.y_ = (y - self.mean_) / self.scale_
        self.upper_ = np.triu_indices(n, 1)
        self.lower_flat_ = self.upper_[1] + n * self.upper_[0]  # column-major (row > column)
        self.dist_ = np.abs(self.X_[self.upper_[0]] - self.X_[self.upper_[1]]).T.copy()
        # For each column and pair, the run with the larger value and the other one, as flat
        # indices into a (columns, runs) table (see _training_columns).
        first, second = (index[:, None] for index in self.upper_)
        above = self.X_[self.upper_[0]] >= self.X_[self.upper_[1]]
        offset = n * np.arange(c)
        self.far_ = (np.where(above, first, second) + offset).T.ravel()
        self.near_ = (np.where(above, second, first) + offset).T.ravel()
        self.buf_ = self._buffers(len(self.upper_[0]))
        self.gram_ = np.empty((n, n), order="F")
        self.outer_ = np.empty((n, n), order="F")

    def fit(self, X: np.ndarray, y: np.ndarray) -> AdditiveGaussianProcess:
        from scipy.optimize import minimize
        from threadpoolctl import threadpool_limits

        self._prepare(X, y)
        rng = np.random.default_rng(self.random_state)
        best: Any = None
        # Matrices of a few hundred rows: several BLAS threads only contend.
        with threadpool_limits(1):
            for attempt in range(1 + self.n_restarts):
                found = minimize(
                    self._neg_log_likelihood,
                    self._start(rng, attempt),
                    jac=True,
                    method="L-BFGS-B",
                    bounds=self._bounds(),
                    options={"maxiter": _MAX_ITER, "ftol": _FTOL},
                )
                if best is None or found.fun < best.fun:
                    best = found
            self.theta_ = best.x
            self.alpha_ = self._weights()
        del self.dist_, self.buf_, self.gram_, self.outer_, self.far_, self.near_
        return self

    def _buffers(self, pairs: int) -> Buffers:
        return Buffers(self.n_columns_, pairs, len(self.groups), self.orders)

    def _weights(self) -> np.ndarray:
        from scipy.linalg import lapack

        n = self.n_
        K = self._cross(self.X_)
        diagonal = self._diagonal(self.theta_) * (1.0 + 1e-10)
        jitter = 0.0
        while True:
            K.flat[:: n + 1] = diagonal + jitter
            L, info = lapack.dpotrf(K, lower=1)
            if info == 0:
                return np.asarray(lapack.dpotrs(L, self.y_, lower=1)[0])
            jitter = max(jitter * 10.0, 1e-10 * diagonal)

    def _cross(self, Z: np.ndarray) -> np.ndarray:
        """The kernel between the rows of ``Z`` (scaled) and the training runs.

        Each column's kernel is evaluated once per distinct value of that column, then looked
        up: the rows a permutation importance asks for are held-out runs with one parameter's
        values swapped, so a column has a few dozen distinct values over thousands of rows,
        and the Matern kernels were most of the cost of scoring."""
        n, c = self.n_, self.n_columns_
        length, plength, _, _, _ = self._unpack(self.theta_)
        where, tables, ptables = [], [], []
        for col in range(c):
            values, inverse = np.unique(Z[:, col], return_inverse=True)
            dist = np.abs(values[:, None] - self.X_[None, :, col]).reshape(1, -1)
            scratch = Buffers(1, dist.shape[1], 1, 0)
            ptables.append(np.empty((len(values), n)))
            matern(self.nu, dist, plength[col : col + 1], scratch, ptables[-1].reshape(1, -1),
                    scratch.dk)  # fmt: skip
            if self.orders:
                tables.append(np.empty((len(values), n)))
                matern(self.nu, dist, length[col : col + 1], scratch, tables[-1].reshape(1, -1),
                        scratch.dk)  # fmt: skip
            where.append(inverse.ravel())
        out = np.empty((len(Z), n))
        rows = max(1, _CHUNK // n)
        for start in range(0, len(Z), rows):
            b = min(rows, len(Z) - start)
            if start == 0 or b < rows:
                buf = self._buffers(b * n)
            for col in range(c):
                index = where[col][start : start + b]
                np.take(ptables[col], index, axis=0, out=buf.kp[col].reshape(b, n))
                if self.orders:
                    np.take(tables[col], index, axis=0, out=buf.k[col].reshape(b, n))
            np.prod(buf.kp, axis=0, out=buf.p)
            self._combine(buf, self.theta_)
            out[start : start + b] = buf.value.reshape(b, n)
        return out

    def predict(self, X: np.ndarray) -> np.ndarray:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            K = self._cross((X - self.low_) / self.span_)
            return np.asarray(K @ self.alpha_) * self.scale_ + self.mean_
