# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install system-deps engine-bytecode demo test test-fast snapshot lint clean

# pip byte-compiles what it installs on one core; compileall does it on every core (on 2 cores
# the install took 0.85 of the time: 101 s against 118 s, medians of 3 pairs). As with pip, a
# file that does not compile for this Python (torch ships one in 3.12's syntax) is left
# uncompiled, hence `-qq` and `|| true`.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -c constraints.txt \
	  -e '.[test]'
	$(PY) -m compileall -qq -j 0 --invalidation-mode timestamp $(VENV)/lib || true
	touch $(STAMP)

# bubblewrap gives the strongest sandbox (without it, or without root, grading degrades and
# says so); chromium lets the tests open the HTML report in a headless browser; git reads
# student repositories as of a due date (`grade --due`).
SYSTEM_PACKAGES := bubblewrap chromium git
system-deps:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v git >/dev/null 2>&1 || missing="$$missing git"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing \
	      >/dev/null) || echo "note: could not install$$missing"; \
	  else echo "note: not installed:$$missing (the sandbox degrades without bubblewrap)"; fi; \
	fi

# The engine's own modules compiled ahead, at every `make` (a no-op when they are up to date):
# every grading process and fork server imports them, and where nothing writes bytecode
# (PYTHONDONTWRITEBYTECODE, the fork server's read-only view under bubblewrap) each one compiled
# them again from source, about a tenth of a second of CPU per process at a class run's start.
# Only the engine: the reference and question files stay without bytecode beside them.
engine-bytecode: $(STAMP)
	@$(PY) -m compileall -qq -j 0 --invalidation-mode timestamp autograder || true

install: $(STAMP) system-deps engine-bytecode

demo: install
	$(VENV)/bin/autograder grade -a attention assignments/attention/examples --feedback \
	  --out demo-results

# pytest-xdist, one worker more than there are cores: many tests wait on a time limit or a
# subprocess, and the extra worker fills that time (on 2 cores, 3 workers took a tenth less
# time than 2, and 4 more than 3). A module's tests stay on one worker, and what several
# modules share is made once (docs/testing.md).
PYTEST_WORKERS := $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile

test: install
	$(PY) -m pytest -q $(PYTEST_PARALLEL)

# Everything but the end-to-end runs marked slow (docs/testing.md): minutes, not a quarter hour.
test-fast: install
	$(PY) -m pytest -q $(PYTEST_PARALLEL) -m "not slow"

# Every folder of assignments/ holding an assignment.toml: an assignment added there is
# snapshotted and linted like the shipped ones.
ASSIGNMENTS := $(patsubst assignments/%/assignment.toml,%,$(wildcard assignments/*/assignment.toml))

snapshot: install
	@set -e; for a in $(ASSIGNMENTS); do $(VENV)/bin/autograder snapshot -a $$a; done

# Authoring mistakes in every assignment (each runs its reference on every case).
lint: install
	@set -e; for a in $(ASSIGNMENTS); do $(VENV)/bin/autograder lint -a $$a >/dev/null; \
	  echo "$$a: no authoring problems found"; done

clean:
	rm -rf $(VENV) demo-results
