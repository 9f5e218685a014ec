"""The scorecard uses "band" for the serving model's band alone and says what a model value shown without one
lacks (trial s18 M1, M2): the tolerance glyph is the "allowed interval", a serving value with no band says "no band"
and why, the headline's serving throughput carries its band's coverage, and a KV pool on more than one GPU reads as
an upper bound with the documented caveat."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_roofline.format.spec import load_spec
from pytest_roofline.model import bands
from pytest_roofline.report.scorecard import render_scorecard, score_spec

HEAD = """\
title: t
hardware: h100-sxm
model: {model}
engine: {{name: vllm, version: "0.33.0", args: {{tensor_parallel_size: {tp}}}}}
workload: {{input_len: 1024, output_len: 1024}}
sweep: {{mode: closed, concurrency: [1, 16, 64]}}
predictions:
  - {{id: kv-tokens, quantity: kv_cache_tokens, predicted: "400,000", tolerance: ±50%}}
  - {{id: ttft-p99-c64, quantity: ttft_p99, at: {{concurrency: 64}}, predicted: 1 s}}
  - {{id: req-tput-c16, quantity: request_throughput, at: {{concurrency: 16}}, predicted: 1.5 req/s}}
  - {{id: tput-c16, quantity: output_throughput, at: {{concurrency: 16}}, predicted: "1,800 tok/s"}}
"""


def _page(tmp_path: Path, *, model: str = "llama-3.1-8b", tp: int = 1) -> str:
    f = tmp_path / "p.yaml"
    f.write_text(HEAD.format(model=model, tp=tp), encoding="utf-8")
    spec = load_spec(f)
    return render_scorecard(spec, score_spec(spec, None), None)


def _row(page: str, pid: str) -> str:
    return page.split(f'id="p-{pid}"', 1)[1].split("</tbody>", 1)[0]


def test_band_means_the_serving_models_band_alone(tmp_path):
    page = _page(tmp_path)
    table = page.split('<table class="preds"', 1)[1]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", table.split("</thead>", 1)[0])
    assert heads[-1] == "allowed interval" and not any("band" in h for h in heads)
    assert "Against the band" not in page and "Allowed interval: shaded" in page
    # where a band is shown, what it is: the nominal coverage read from the constant (0.80 -> "80% nominal")
    assert f"{round(100 * bands.NOMINAL_COVERAGE)}% nominal" in page


def test_serving_values_without_a_band_say_so_and_why(tmp_path):
    page = _page(tmp_path)
    p99 = _row(page, "ttft-p99-c64").split('<td class="num serving"', 1)[1].split("</td>", 1)[0]
    # one public source reports TTFT p99 (LambdaLabsML/vllm-benchmark): too few to bound a new source's error
    assert ">no band<" in p99 and "one public source of the accuracy corpus reports TTFT p99" in p99
    req = _row(page, "req-tput-c16").split('<td class="num serving"', 1)[1].split("</td>", 1)[0]
    assert ">no band<" in req and "requests/s" in req
    tput = _row(page, "tput-c16").split('<td class="num serving"', 1)[1].split("</td>", 1)[0]
    assert ">no band<" not in tput and 'class="sband"' in tput  # output tok/s at C=16 on an H100 has a band


def test_the_headline_serving_throughput_carries_its_band_or_why_not(tmp_path):
    page = _page(tmp_path)
    head = page.split("<dt>serving model</dt><dd>", 1)[1].split("</dd>", 1)[0]
    m = re.search(r"([\d,.]+) tok/s at C = 64 \(band ([\d,.]+)–([\d,.]+), (\d+)% nominal\)", head)
    assert m, head
    value, lo, hi = (float(x.replace(",", "")) for x in m.groups()[:3])
    assert lo < value < hi and int(m.group(4)) == round(100 * bands.NOMINAL_COVERAGE)
    assert "knees: no band" in head


def test_a_kv_pool_on_more_than_one_gpu_reads_as_an_upper_bound(tmp_path):
    one = _row(_page(tmp_path), "kv-tokens")
    assert "upper bound" not in one
    four = _row(_page(tmp_path, model="llama-3.1-70b", tp=4), "kv-tokens")
    assert "upper bound" in four
    # the caveat cites where the measured TP error lives, not a copied figure
    assert "benchmarks/RESULTS-kv-capacity.md" in four and "4 GPUs" in four


def test_a_cpu_headline_band_carries_the_cpu_caveat():
    spec = load_spec(Path(__file__).resolve().parents[2] / "predictions" / "cpu-tiny.yaml")
    page = render_scorecard(spec, score_spec(spec, None), None)
    head = page.split("<dt>serving model</dt><dd>", 1)[1].split("</dd>", 1)[0]
    assert "nominal" in head and bands.CPU_BAND_CAVEAT.split(";")[0] in head  # one host's recordings


def test_largest_misses_show_the_value_a_band_verdict_was_checked_against(tmp_path: Path) -> None:
    """A FAIL the serving band decided takes its error against the serving model's value (trial s18 H3): the
    Largest-misses row shows that value, not the roofline's, beside the error."""
    f = tmp_path / "m.yaml"
    f.write_text(HEAD.format(model="llama-3.1-8b", tp=1).replace('predicted: "1,800 tok/s"', 'predicted: "900 tok/s"'),
                 encoding="utf-8")
    spec = load_spec(f)
    verdicts = score_spec(spec, None)
    v = next(x for x in verdicts if x.id == "tput-c16")
    assert v.status.value == "fail" and v.tolerance_text.startswith("serving band ")
    assert v.serving_text != v.model_text  # the roofline's 2,779.8 tok/s against the serving model's value
    page = render_scorecard(spec, verdicts, None)
    misses = page.split("<h4>Largest misses</h4>", 1)[1].split("</table>", 1)[0]
    row = next(r for r in misses.split("<tr>") if 'href="#p-tput-c16"' in r)
    assert f'<td class="num">{v.serving_text}</td>' in row and v.model_text not in row
