"""The load generator's request body carries a dataset's token ids as they are, even ids beyond the range it
draws synthetic prompts from (issue 23: a live point on a dataset whose tokenizer.json numbers 1,000 words failed
with 'list index out of range', roofline-tiny's range being smaller). The expected body is json.dumps' own."""

from __future__ import annotations

import json

from pytest_roofline.measure.loadgen import LoadSpec
from pytest_roofline.measure.loadgen._prompts import BodyTemplate, request_body


def test_ids_beyond_the_synthetic_range_are_sent_as_they_are() -> None:
    spec = LoadSpec(model="m", token_id_range=(10, 300), mode="closed", concurrency=1, num_requests=2,
                    input_len=4, output_len=3)
    for prompt in ([5, 299], [0, 300, 1000, 150_000]):
        want = json.dumps(request_body(spec, prompt), separators=(",", ":")).encode()
        assert BodyTemplate(spec).body(prompt) == want
