# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install system-deps demo test snapshot clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $(STAMP)

# bubblewrap gives the strongest sandbox; without it (or without root) grading degrades and says so.
system-deps:
	@if ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || \
	      echo "note: could not install bubblewrap; the sandbox will use a weaker level"; \
	  else echo "note: bubblewrap not installed; the sandbox will use a weaker level"; fi; \
	fi

install: $(STAMP) system-deps

demo: install
	$(VENV)/bin/autograder grade -a attention assignments/attention/examples --feedback \
	  --json demo-results.json

test: install
	$(PY) -m pytest -q

snapshot: install
	$(VENV)/bin/autograder snapshot -a attention

clean:
	rm -rf $(VENV) demo-results.json
