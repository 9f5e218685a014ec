# Two commands on a fresh machine:
#   make demo   - the main job on the embedded default: every prediction file, CPU-only math mode
#   make test   - the test suite (starts the real CPU build of vLLM for the engine tests)
#   make lint   - ruff over the Python tree and mypy over the package (both configured in pyproject.toml)
# Both install everything first (once): a venv with the package, the test tools and vLLM's CPU build.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
MATH_STAMP := $(VENV)/.installed-math

.PHONY: install demo test demo-cpu-engine replay scorecard bench bench-model lint clean

$(STAMP): pyproject.toml scripts/install.sh
	PY=$(PY) bash scripts/install.sh
	touch $(STAMP) $(MATH_STAMP)

# the math demo needs only the package: no vLLM, no torch, no browser (scripts/install.sh --math)
$(MATH_STAMP): pyproject.toml scripts/install.sh
	PY=$(PY) bash scripts/install.sh --math
	touch $(MATH_STAMP)

install: $(STAMP)

demo: $(MATH_STAMP)
	$(BIN)/python -m pytest predictions/

test: $(STAMP)
	$(BIN)/python -m pytest tests

LINT_PATHS := pytest_roofline tests benchmarks conftest.py

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/python -m mypy

demo-cpu-engine: $(STAMP)
	$(BIN)/python -m pytest --gpu cpu predictions/cpu-tiny.yaml --roofline-scorecard roofline-runs/cpu-tiny-scorecard.html

replay: $(STAMP)
	$(BIN)/python -m pytest --replay predictions/recorded/day3-2026-07-31.results.json predictions/day3.yaml \
	    --html=roofline-runs/day3-report.html --self-contained-html \
	    --roofline-scorecard roofline-runs/day3-scorecard.html

bench: $(STAMP)
	$(BIN)/python benchmarks/loadgen_bench.py

bench-model: $(STAMP)
	$(BIN)/python benchmarks/serving_speed.py
	$(BIN)/python benchmarks/model_accuracy.py
	$(BIN)/python benchmarks/kv_capacity.py
	$(BIN)/python benchmarks/quantized_checkpoints.py

clean:
	rm -rf $(VENV) roofline-runs .pytest_cache
