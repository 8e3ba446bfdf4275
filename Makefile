# Two commands set everything up on a fresh machine: `make build` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.installed
TRL_STAMP := $(VENV)/.installed-trl
# The CPU build of torch (a file on these machines) keeps TRL from pulling a CUDA build.
TORCH ?= torch==2.13.0

.PHONY: build test test-fast lint format bench schema publish clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -e '.[test]'
	touch $@

$(TRL_STAMP): $(STAMP)
	$(PIP) install '$(TORCH)'
	$(PIP) install -e '.[test,trl,ray]'
	touch $@

build: $(STAMP)  ## build the sample dataset into build/dataset
	$(VENV)/bin/episodes build

test: $(TRL_STAMP)  ## the whole suite, TRL format checks and PostgreSQL included
	$(PY) -m pytest -q

test-fast: $(STAMP)  ## the suite without installing TRL (its tests are skipped)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP)  ## throughput and peak memory; results in .bench/
	$(PY) -m benchmarks

publish: $(STAMP)  ## release build/dataset: make publish VERSION=X.Y.Z [REPO=org/name] [DRY_RUN=1]
	@test -n "$(VERSION)" || { echo "usage: make publish VERSION=X.Y.Z [REPO=org/name] [DRY_RUN=1]" >&2; exit 1; }
	$(VENV)/bin/episodes publish --version $(VERSION) $(if $(REPO),--repo $(REPO)) $(if $(DRY_RUN),--dry-run)

schema: $(STAMP)  ## regenerate schemas/episode.schema.json
	$(VENV)/bin/episodes schema --out schemas/episode.schema.json

clean:
	rm -rf build .bench .pytest_cache .ruff_cache
