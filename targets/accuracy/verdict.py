"""verdict.py — the real-workload accuracy verdict (ci/accuracy real):
each profiler's leaf distributions (leaves.py) against a reference that is
exact by construction, beside a noise floor that is measured.

Reference: `frameproof record --blocking` (every thread stopped for each
sample: nothing changes while it is read), run R >= 2 times.  Floor: the
mean total variation distance (TVD) between every pair of reference runs —
what two exact profiles of the same workload differ by from sampling and
run-to-run variation alone.  A profiler run's TVD is the mean of its TVD
against each reference run; over its runs the row gives mean, min and
max, and "x floor" = mean TVD / floor.  Distributions are first coarsened
to the TOP leaves of the references pooled, the rest one leaf "(other)":
a real program has hundreds of leaves of a fraction of a percent each,
whose sampling noise alone would otherwise make the floor (~0.2 for a
test suite at 4 000 samples) larger than any bias worth finding; the
leaves a bias moves (the short functions a sampler loses) are among the
largest.  Verdict: a profiler that must be
accurate passes when x floor <= BOUND; a mutant (a sampler known to be
biased) must fail it, else the verdict has no teeth."""
import itertools
import math
import statistics

from compare import tvd  # (the same distance as the synthetic workloads')

BOUND = 1.25   # x floor
TOP = 20       # leaves kept apart by coarsen(); 0: all
OTHER = ("", "(other)")
MIN_SPLITS = 20   # exchangeable_p(): fewer splits give no p worth printing


def top_leaves(references, top=TOP):
    """The top leaves of the references pooled (None: all of them)."""
    if top <= 0:
        return None
    pooled = {}
    for r in references:
        for k, v in r.items():
            pooled[k] = pooled.get(k, 0.0) + v
    return set(sorted(pooled, key=lambda k: (-pooled[k], k))[:top])


def coarsen(p, top):
    """p with every leaf outside top merged into OTHER (p itself when top is None)."""
    if top is None:
        return p
    out = {}
    for k, v in p.items():
        kk = k if k in top else OTHER
        out[kk] = out.get(kk, 0.0) + v
    return out


def mean_pairwise(items, dist=tvd):
    """Mean of dist over every pair of items (the floor's arithmetic)."""
    pairs = list(itertools.combinations(items, 2))
    return statistics.fmean(dist(a, b) for a, b in pairs) if pairs else float("nan")


def distances_to(runs, references, dist=tvd):
    """Each run's mean dist to the references (a row's TVD per run)."""
    return [statistics.fmean(dist(p, r) for r in references) for p in runs]


def ratio(mean, ref_floor):
    """x floor: a mean distance in units of the floor."""
    return mean / ref_floor if ref_floor > 0 else float("inf")


def floor(references):
    """Mean pairwise TVD of the reference distributions (>= 2 of them)."""
    return mean_pairwise(references)


def judge(runs, references, ref_floor):
    """runs: the profiler's distributions.  {tvd_mean, tvd_min, tvd_max,
    x_floor}; each run's TVD is its mean TVD against every reference."""
    per_run = distances_to(runs, references)
    mean = statistics.fmean(per_run)
    return {"tvd_runs": per_run, "tvd_mean": mean, "tvd_min": min(per_run), "tvd_max": max(per_run),
            "x_floor": ratio(mean, ref_floor)}


def exchangeable_p(runs, references):
    """How often the row's x floor, or more, comes from relabelling alone:
    the share of the ways to split the pooled distributions (runs and
    references) into a group of len(references) and one of len(runs) whose
    x floor (judge(), the first group the references) is at least the
    observed one.  Small: the profiler's runs are farther from the
    references than the references' own runs are from each other, a bias;
    near 1: its runs cannot be told from reference runs.  None with fewer
    than MIN_SPLITS splits (a p of 1/4 says nothing).  The verdict is the
    bound, not this; it says whether an x floor beyond the bound is a bias
    or the spread of a few runs.  The distances are taken once, between
    indices of the pooled list, and the same arithmetic as floor() and
    judge() applied to each split."""
    pooled = list(runs) + list(references)
    n, k = len(pooled), len(references)
    if math.comb(n, k) < MIN_SPLITS or len(runs) < 1 or k < 2:
        return None
    d = [[tvd(a, b) for b in pooled] for a in pooled]

    def by_index(i, j):
        return d[i][j]

    def x_floor(refs):
        others = [i for i in range(n) if i not in refs]
        return ratio(statistics.fmean(distances_to(others, refs, by_index)), mean_pairwise(refs, by_index))
    observed = x_floor(tuple(range(len(runs), n)))
    splits = list(itertools.combinations(range(n), k))
    # a relabelling at least as far as the observed one, within rounding
    hits = sum(1 for refs in splits if x_floor(refs) >= observed - 1e-12)
    return hits / len(splits)


def passes(x_floor, bound=BOUND):
    return x_floor <= bound


def worst(p, references, n=3):
    """The n leaves p is farthest off on, against the references' mean:
    [(leaf, p share, reference share)]."""
    keys = set(p).union(*references)
    ref = {k: statistics.fmean(r.get(k, 0.0) for r in references) for k in keys}
    return sorted(((k, p.get(k, 0.0), ref[k]) for k in keys), key=lambda t: -abs(t[1] - t[2]))[:n]
