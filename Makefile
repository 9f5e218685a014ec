# Two commands on a fresh machine:
#   make demo   - the main job on the embedded default: every prediction file, CPU-only math mode
#   make test   - the whole test suite on two workers: the engine tests (the real CPU build of vLLM) one after
#                 another on one of them, the unit and integration tests beside them; prints the 15 slowest tests
#   make test-fast - the unit and fast integration tests (no engine, nothing marked slow): the tight loop
#   make docs   - the guide (docs/, mkdocs.yml): the generated reference pages checked against the code, then
#                 mkdocs build --strict into site/
#   make lint   - ruff over the Python tree and mypy over the package (both configured in pyproject.toml)
# Both install everything first (once): a venv with the package, the test tools and vLLM's CPU build.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
MATH_STAMP := $(VENV)/.installed-math

.PHONY: install demo docs test test-fast demo-cpu-engine replay scorecard bench bench-model lint clean

$(STAMP): pyproject.toml scripts/install.sh
	PY=$(PY) bash scripts/install.sh
	touch $(STAMP) $(MATH_STAMP)

# the math demo needs only the package: no vLLM, no torch, no browser (scripts/install.sh --math)
$(MATH_STAMP): pyproject.toml scripts/install.sh
	PY=$(PY) bash scripts/install.sh --math
	touch $(MATH_STAMP)

install: $(STAMP)

# a CI log (no terminal) is read at 120 columns, not pytest's 80, where the ids were cut (weig…otprint)
demo: $(MATH_STAMP)
	@if [ -t 1 ]; then $(BIN)/python -m pytest predictions/; \
	else COLUMNS=$${COLUMNS:-120} $(BIN)/python -m pytest predictions/; fi

# tests/README.md: what each folder costs. One run on two workers: the engine tests are one work unit
# (tests/conftest.py's xdist scheduler), so they run one after another on one worker and share its session engines, while the other
# worker runs the unit and integration tests in the time an engine start leaves a core idle.
test: $(STAMP)
	$(BIN)/python -m pytest tests -n 2 --dist loadgroup --durations=15

test-fast: $(STAMP)
	$(BIN)/python -m pytest tests/unit tests/integration -m "not slow" -n 2

docs: $(STAMP)
	$(BIN)/python scripts/docs_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

LINT_PATHS := pytest_roofline tests benchmarks conftest.py

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/python -m mypy

demo-cpu-engine: $(STAMP)
	$(BIN)/python -m pytest --gpu cpu predictions/cpu-tiny.yaml --roofline-scorecard roofline-runs/cpu-tiny-scorecard.html

# a replay needs only the package and pytest-html (its --html report): no vLLM, no browser, no PostgreSQL
HTML_STAMP := $(VENV)/.installed-html
$(HTML_STAMP): $(MATH_STAMP)
	$(BIN)/python -c "import pytest_html" 2>/dev/null || $(BIN)/pip install -q -e ".[html]"
	touch $(HTML_STAMP)

replay: $(HTML_STAMP)
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
