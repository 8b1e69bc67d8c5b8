"""Slow, obviously correct metric references: dense matrices, Python loops, sorted lists."""

import numpy as np


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def neighbours(x, k):
    g = unit(x) @ unit(x).T
    n = len(x)
    return [
        sorted((j for j in range(n) if j != i), key=lambda j: (-g[i, j], j))[:k] for i in range(n)
    ]


def mutual_knn(a, b, k):
    na, nb = neighbours(a, k), neighbours(b, k)
    return sum(len(set(p) & set(q)) / k for p, q in zip(na, nb)) / len(a)


def cycle_knn(a, b, k):
    na, nb = neighbours(a, k), neighbours(b, k)
    return sum(any(i in na[j] for j in nb[i]) for i in range(len(a))) / len(a)


def lcs(x, y):
    dp = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
    for i in range(1, len(x) + 1):
        for j in range(1, len(y) + 1):
            dp[i][j] = (
                dp[i - 1][j - 1] + 1 if x[i - 1] == y[j - 1] else max(dp[i - 1][j], dp[i][j - 1])
            )
    return dp[-1][-1]


def levenshtein(x, y):
    prev = list(range(len(y) + 1))
    for i in range(1, len(x) + 1):
        cur = [i] + [0] * len(y)
        for j in range(1, len(y) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] != y[j - 1]))
        prev = cur
    return prev[-1]


def lcs_knn(a, b, k):
    na, nb = neighbours(a, k), neighbours(b, k)
    return float(np.mean([lcs(p, q) for p, q in zip(na, nb)])) / k


def edit_distance_knn(a, b, k):
    na, nb = neighbours(a, k), neighbours(b, k)
    return 1 - float(np.mean([levenshtein(p, q) for p, q in zip(na, nb)])) / k


def hsic_biased(K, L):
    n = len(K)
    H = np.eye(n) - 1.0 / n
    return np.trace(K @ H @ L @ H)


def hsic_unbiased(K, L):
    m = len(K)
    Kt, Lt = K.copy(), L.copy()
    np.fill_diagonal(Kt, 0)
    np.fill_diagonal(Lt, 0)
    v = (
        (Kt * Lt.T).sum()
        + Kt.sum() * Lt.sum() / ((m - 1) * (m - 2))
        - 2 * (Kt @ Lt).sum() / (m - 2)
    )
    return v / (m * (m - 3))


def kernel(x, kind, sigma):
    x = np.asarray(x, dtype=np.float64)
    if kind == "linear":
        return x @ x.T
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


def cka(a, b, kind="linear", sigma=1.0, unbiased=False):
    K, L = kernel(a, kind, sigma), kernel(b, kind, sigma)
    h = hsic_unbiased if unbiased else hsic_biased
    return h(K, L) / np.sqrt(h(K, K) * h(L, L))


def cknna(a, b, k):
    """The reference's dense construction: top-k masks by K itself, masked unbiased HSIC."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    K, L = a @ a.T, b @ b.T
    n = len(K)

    def mask(G):
        M = np.zeros((n, n))
        for i in range(n):
            order = sorted((j for j in range(n) if j != i), key=lambda j: (-G[i, j], j))[:k]
            M[i, order] = 1
        return M

    MK, ML = mask(K), mask(L)
    kl = hsic_unbiased(MK * ML * K, MK * ML * L)
    kk = hsic_unbiased(MK * K, MK * K)
    ll = hsic_unbiased(ML * L, ML * L)
    return kl / np.sqrt(kk * ll)


def svcca(a, b, dim):
    """Top-dim principal directions via eigh of X^T X, CCA via whitened cross-covariance."""

    def basis(x):
        x = np.asarray(x, np.float64)
        x = x - x.mean(0)
        x = x / (x.std(0, ddof=1) + 1e-8)
        w, v = np.linalg.eigh(x.T @ x)
        top = v[:, np.argsort(w)[::-1][:dim]]
        return x @ top  # scores span the same space as the top left singular vectors

    pa, pb = basis(a), basis(b)

    def inv_sqrt(c):
        w, v = np.linalg.eigh(c)
        return v @ np.diag(w**-0.5) @ v.T

    caa, cbb, cab = pa.T @ pa, pb.T @ pb, pa.T @ pb
    rho = np.linalg.svd(inv_sqrt(caa) @ cab @ inv_sqrt(cbb), compute_uv=False)
    return float(np.mean(rho))


# platonic-rep's preprocessing and layer search, re-written from its formulas in torch
# (measure_alignment.prepare_features, metrics.remove_outliers, measure_alignment.compute_score).


def remove_outliers(feats, q=0.95, exact=False):
    """Clamp a tensor at the q quantile of |feats|: exact = one sorted array, else the mean over
    samples of each sample's quantile over all its other axes (torch.quantile, linear)."""
    import torch

    if q == 1:
        return feats
    if exact:
        t = feats.reshape(-1).abs().sort().values[int(q * feats.numel())]
    else:
        t = torch.quantile(feats.abs().flatten(start_dim=1), q, dim=1).mean()
    return feats.clamp(-t, t)


def prepare_features(feats, q=0.95, exact=False):
    """One tensor: one threshold; a list of layers: one threshold per layer."""
    if isinstance(feats, list):
        return [remove_outliers(f.float(), q, exact) for f in feats]
    return remove_outliers(feats.float(), q, exact)


def best_layer_pair(x_feats, y_feats, score):
    """Max over layer pairs of score(unit x_i, unit y_j), from 0, strict improvements only."""
    import torch

    def layers(f):
        return [f[:, i] for i in range(f.shape[1])] if isinstance(f, torch.Tensor) else list(f)

    best, where = 0.0, None
    for i, x in enumerate(layers(x_feats)):
        for j, y in enumerate(layers(y_feats)):
            s = score(unit(x.numpy()), unit(y.numpy()))
            if s > best:
                best, where = s, (i, j)
    return best, where


def unbiased_cka_eps(a, b, eps=1e-6):
    """The reference's CKA quotient: HSIC_u(K, L) / (sqrt(HSIC_u(K, K) HSIC_u(L, L)) + eps)."""
    K, L = kernel(a, "linear", 1.0), kernel(b, "linear", 1.0)
    return hsic_unbiased(K, L) / (np.sqrt(hsic_unbiased(K, K) * hsic_unbiased(L, L)) + eps)
