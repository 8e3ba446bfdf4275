# Two commands set everything up on a fresh machine: `make build` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.installed
TRL_STAMP := $(VENV)/.installed-trl
# The CPU build of torch (a file on these machines) keeps TRL from pulling a CUDA build.
TORCH ?= torch==2.13.0

.PHONY: build test test-fast browser lint format bench schema publish clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -e '.[test]'
	touch $@

$(TRL_STAMP): $(STAMP)
	$(PIP) install '$(TORCH)'
	$(PIP) install -e '.[test,trl,ray]'
	touch $@

# Axolotl pins other releases of datasets and transformers than the project's: it gets a venv
# of its own, which the tests run its dataset preparation in (tests/builder/export/axolotl_check.py).
# Its dependencies are those that preparation imports (a training run needs more).
AXOLOTL_VENV ?= .venv-axolotl
AXOLOTL_STAMP := $(AXOLOTL_VENV)/.installed
AXOLOTL ?= axolotl==0.19.0
AXOLOTL_DEPS := transformers==5.16.1 tokenizers==0.23.1 datasets==4.8.4 accelerate==1.13.0 \
	peft==0.20.0 trl==1.9.0 huggingface_hub==1.17.0 pydantic==2.12.5 PyYAML==6.0.3 \
	packaging==26.0 typer==0.25.1 posthog==6.7.11 python-dotenv==1.0.1 fire addict colorama \
	einops requests sentencepiece pillow numba

$(AXOLOTL_STAMP):
	test -x $(AXOLOTL_VENV)/bin/python || $(PYTHON) -m venv $(AXOLOTL_VENV)
	$(AXOLOTL_VENV)/bin/python -m pip --disable-pip-version-check -q install '$(TORCH)'
	$(AXOLOTL_VENV)/bin/python -m pip --disable-pip-version-check -q install --no-deps '$(AXOLOTL)'
	$(AXOLOTL_VENV)/bin/python -m pip --disable-pip-version-check -q install $(AXOLOTL_DEPS)
	touch $@

build: $(STAMP)  ## build the sample dataset into build/dataset, its report beside it
	$(VENV)/bin/episodes build
	$(VENV)/bin/episodes report

test: $(TRL_STAMP) $(AXOLOTL_STAMP) browser  ## the whole suite: TRL, Axolotl, PostgreSQL and Chromium included
	$(PY) -m pytest -q

# The report's tests open it in Debian's Chromium: installed here when missing (as root, with
# apt-get). Without it those tests fail and say so; only test-fast may skip them.
BROWSERS := chromium chromium-browser google-chrome google-chrome-stable
browser:
	@for b in $(BROWSERS); do command -v $$b >/dev/null 2>&1 && exit 0; done; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
			|| echo "apt-get could not install chromium: the report's browser tests will fail" >&2; \
	else \
		echo "Chromium is missing and cannot be installed here (needs root and apt-get):" \
			"install it, or the report's browser tests fail" >&2; \
	fi

test-fast: $(STAMP)  ## the suite without installing TRL or Chromium (their tests are skipped)
	REPORT_BROWSER=optional $(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	$(PIP) install -e '.[test,bench]'
	touch $@

bench: $(BENCH_STAMP)  ## throughput and peak memory against the peers; results in .bench/
	$(PY) -m benchmarks

publish: $(STAMP)  ## release build/dataset: make publish VERSION=X.Y.Z [REPO=org/name] [DRY_RUN=1]
	@test -n "$(VERSION)" || { echo "usage: make publish VERSION=X.Y.Z [REPO=org/name] [DRY_RUN=1]" >&2; exit 1; }
	$(VENV)/bin/episodes publish --version $(VERSION) $(if $(REPO),--repo $(REPO)) $(if $(filter-out 0 no false,$(DRY_RUN)),--dry-run)

schema: $(STAMP)  ## regenerate schemas/episode.schema.json
	$(VENV)/bin/episodes schema --out schemas/episode.schema.json

clean:
	rm -rf build .bench .pytest_cache .ruff_cache
