# The two set-up commands of the README:
#   make demo   build or reuse the lab image, boot the lab, run the demo sweep and report
#   make test   set up what is missing, then run the whole test suite
#   make lint   ruff (line length, pyflakes, function-level limits) and the import contracts
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.zbench-installed

.PHONY: demo test test-fast lint setup host-packages test-packages venv image image-zfs21 images bench clean-venv

setup: host-packages venv

host-packages:
	@$(PYTHON) -m zbench_lib.hosts.setup_host

# What only the tests need (setup_host's TEST_TOOLS): chromium for the report pages, pdflatex with
# booktabs, rotating and graphicx for the LaTeX export (texlive-latex-base, texlive-latex-recommended).
# Once they are installed the tests that need them may not skip: ZBENCH_TEST_TOOLS=installed below.
test-packages:
	@$(PYTHON) -m zbench_lib.hosts.setup_host --tests

$(STAMP): pyproject.toml environment.yml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
	  echo "python3 -m venv failed: install the venv module (apt-get install python3-venv)"; exit 2; }
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	@touch $(STAMP)

venv: $(STAMP)

image: setup
	$(BIN)/zbench lab build

# The OpenZFS 2.1 image, for the focused 2.1 subset of the lab tests (built once, cached).
image-zfs21: setup
	$(BIN)/zbench lab build --zfs 2.1

# Both images, built side by side (489 s on a 2-core machine, against 896 s one after the other).
images: setup
	$(BIN)/zbench lab build --all

demo: image
	$(BIN)/zbench demo

# nbval re-executes the analysis notebooks on data/examples and compares every output with
# the stored one (scripts/store_notebook_outputs.py writes them). It skips image/png (the
# figures' static PNGs) unless given --nbdime, so none is passed here.
NBVAL := notebooks/analysis-scaling.ipynb notebooks/analysis-volblocksize.ipynb \
         notebooks/analysis-compare.ipynb --nbval --nbval-current-env \
         --nbval-sanitize-with tests/nbval_sanitize.cfg

# Seconds: ruff's rules and limits ([tool.ruff] in pyproject.toml: line length, pyflakes, each
# function's complexity, arguments, branches, statements) and the layer contract ([tool.importlinter]).
lint: venv
	$(BIN)/ruff check zbench_lib zbench tests benchmarks scripts
	$(BIN)/lint-imports

# The whole suite, after the lint (first: it fails in seconds, before an image is built): the
# unit tests and notebooks on every core (pytest-xdist; a file's tests stay on one worker), then the
# lab tests in one process, one after another (they measure: nothing may run beside them), sharing
# one lab for the session; their labs are restored from saved VM states in seconds (lab_restore).
test: lint images test-packages
	ZBENCH_TEST_TOOLS=installed $(BIN)/python -m pytest -q -ra -n auto --dist loadfile --durations=20 \
	  -m "not lab" tests $(NBVAL)
	ZBENCH_TEST_TOOLS=installed $(BIN)/python -m pytest -q -ra --durations=40 -m lab tests

test-fast: lint setup test-packages
	ZBENCH_TEST_TOOLS=installed $(BIN)/python -m pytest -q -ra -n auto --dist loadfile -m "not lab" tests $(NBVAL)

bench: image
	$(BIN)/python benchmarks/disk_models.py
	$(BIN)/python benchmarks/lab_boot.py

clean-venv:
	rm -rf $(VENV)
