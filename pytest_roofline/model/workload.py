"""The open-loop arrival schedule: one seeded function that the load generator and the serving model share.

A measured open-loop point and its simulation must see the *same* arrivals, or a comparison at a nominal rate
compares two different samples of it (at 2 req/s over 120 requests, two Poisson samples differ in their
realised rate by ~10% at one standard deviation). :func:`arrival_offsets_s` is that schedule: gaps are
``gamma(shape=burstiness, scale=1/(rate x burstiness))`` (1.0 = Poisson; the convention of
``vllm bench serve --burstiness``, vllm/benchmarks/serve.py, ``get_request``), drawn from numpy's PCG64 generator
seeded by (seed, stream id) through :class:`numpy.random.SeedSequence`. The load generator
(``pytest_roofline.measure.loadgen._prompts.arrival_offsets``) passes its ``LoadSpec.seed`` and
``LoadSpec.point_id``; the simulator (``model.serving``) passes ``Workload.seed`` and ``Workload.point_id``.

numpy is used (not ``random``) because the load generator's schedule was drawn with it from the start: the
recorded open-loop runs under ``predictions/recorded/`` were sent on numpy's draws, and only the same generator
reproduces them. Request lengths are not sampled here: the load generator sends fixed lengths
(``LoadSpec.input_len``/``output_len``), and the simulator's distributed lengths (``serving.LengthDist``) have no
load-generator counterpart yet.

Pure: no I/O, no clock; the same arguments always give the same array.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where a schedule is drawn, not when the plugin loads (every pytest start)
    import numpy as np

__all__ = ["seeded_rng", "arrival_offsets_s", "STREAM_PROMPT", "STREAM_PREFIX", "STREAM_SCHEDULE",
           "STREAM_WARMUP_SCHEDULE", "STREAM_PERMUTATION"]

#: spawn keys of the seeded streams of one point (one per use, so that they never overlap)
STREAM_PROMPT, STREAM_PREFIX, STREAM_SCHEDULE, STREAM_WARMUP_SCHEDULE, STREAM_PERMUTATION = range(5)

_BLOCK = 1024  # gaps drawn per call to the generator (the draws do not depend on it: numpy fills in order)


def _entropy(seed: int, stream_id: str) -> list[int]:
    digest = hashlib.sha256(stream_id.encode("utf-8")).digest()
    return [int(seed), int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")]


def seeded_rng(seed: int, stream_id: str, *spawn_key: int) -> np.random.Generator:
    """The generator of one stream of one point: seeded by (seed, sha256(stream_id)) and the spawn key."""
    import numpy as np
    return np.random.default_rng(np.random.SeedSequence(_entropy(seed, stream_id), spawn_key=spawn_key))


def arrival_offsets_s(*, rate_req_per_s: float, burstiness: float = 1.0, seed: int = 0, stream_id: str = "point",
                      count: int | None = None, horizon_s: float | None = None,
                      warmup: bool = False) -> np.ndarray:
    """Send times of an open-loop point's requests, seconds after the phase start (the first is 0).

    ``count`` arrivals, or (with ``horizon_s``) those before the horizon, whichever comes first; one of them is
    required. ``warmup`` draws the warm-up phase's schedule from its own stream.
    """
    import numpy as np

    if not (rate_req_per_s > 0 and np.isfinite(rate_req_per_s)):
        raise ValueError("arrival_offsets_s needs a finite rate_req_per_s > 0")
    if not burstiness > 0:
        raise ValueError("burstiness must be > 0")
    if count is None and horizon_s is None:
        raise ValueError("give count or horizon_s")
    rng = seeded_rng(seed, stream_id, STREAM_WARMUP_SCHEDULE if warmup else STREAM_SCHEDULE)
    shape = float(burstiness)
    scale = 1.0 / (float(rate_req_per_s) * shape)
    out: list[np.ndarray] = []
    t = 0.0
    n = 0
    while count is None or n < count:
        gaps = rng.gamma(shape, scale, size=_BLOCK)
        times = t + np.concatenate(([0.0], np.cumsum(gaps)))
        offs, t = times[:-1], float(times[-1])
        if horizon_s is not None:
            offs = offs[offs < horizon_s]
        out.append(offs)
        n += len(offs)
        if horizon_s is not None and t >= horizon_s:
            break
    res = np.concatenate(out) if out else np.zeros(0)
    return res[:count] if count is not None else res
