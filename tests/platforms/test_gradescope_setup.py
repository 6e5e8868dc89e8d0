"""setup.sh finds Python 3.11+ in the distribution's own packages before any third-party one.

The Python part of setup.sh (`SETUP_PYTHON`) runs here against stand-ins for apt-get,
apt-cache and add-apt-repository that log every call and "install" fake interpreters, modelling
the images Gradescope builds on: Debian 12 (python3 is 3.11), Ubuntu 22.04 (python3 is 3.10,
python3.11 in the archive's universe), Ubuntu 22.04 with universe disabled, Ubuntu 20.04 (no 3.11
anywhere but the deadsnakes PPA), and an image where nothing works.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from autograder.platforms.gradescope.build import SETUP_PYTHON

FAKE_PYTHON = """#!/bin/bash
if [ "$1" = --version ]; then echo "Python {version}"; exit 0; fi
exit {code}
"""

APT_CACHE = """#!/bin/bash
# apt-cache policy NAME: a candidate if some enabled source offers NAME
[ "$1" = policy ] || exit 1
for src in $(cat "$STATE/enabled"); do
  if grep -qx "$2" "$STATE/offers-$src" 2>/dev/null; then
    echo "$2:"; echo "  Candidate: 3.11.0-1"; exit 0
  fi
done
echo "$2:"; echo "  Candidate: (none)"
"""

APT_GET = """#!/bin/bash
echo "apt-get $*" >> "$STATE/log"
[ "$1" = install ] || exit 0
for pkg in "$@"; do
  case "$pkg" in
    python3.1[0-9])
      found=""
      for src in $(cat "$STATE/enabled"); do
        grep -qx "$pkg" "$STATE/offers-$src" 2>/dev/null && found=1
      done
      [ -n "$found" ] || exit 100
      printf '#!/bin/bash\\nif [ "$1" = --version ]; then echo "Python %s.4"; exit 0; fi\\nexit 0\\n' \\
        "${pkg#python}" > "$BIN/$pkg"
      chmod +x "$BIN/$pkg";;
    software-properties-common)
      [ -f "$STATE/has-spc" ] && cp "$STATE/add-apt-repository" "$BIN/add-apt-repository";;
  esac
done
"""

ADD_APT_REPOSITORY = """#!/bin/bash
echo "add-apt-repository $*" >> "$STATE/log"
case "$2" in
  universe) echo universe >> "$STATE/enabled";;
  ppa:deadsnakes/ppa) echo deadsnakes >> "$STATE/enabled";;
esac
"""


def _image(tmp_path: Path, python3: str | None, enabled: list[str],
           offers: dict[str, list[str]], spc: bool = True) -> tuple[Path, Path]:
    """A fake image: a PATH folder (bin) and the package sources' state."""
    bin_, state = tmp_path / "bin", tmp_path / "state"
    bin_.mkdir()
    state.mkdir()
    for tool in ("grep", "cat", "cp", "chmod"):
        (bin_ / tool).symlink_to(shutil.which(tool))
    scripts = {"apt-get": APT_GET, "apt-cache": APT_CACHE}
    if python3:
        major_minor = tuple(int(x) for x in python3.split(".")[:2])
        scripts["python3"] = FAKE_PYTHON.format(version=python3,
                                                code=0 if major_minor >= (3, 11) else 1)
    for name, text in scripts.items():
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    (state / "add-apt-repository").write_text(ADD_APT_REPOSITORY)
    (state / "add-apt-repository").chmod(0o755)
    if spc:
        (state / "has-spc").touch()
    (state / "enabled").write_text("".join(f"{s}\n" for s in enabled))
    for src, pkgs in offers.items():
        (state / f"offers-{src}").write_text("".join(f"{p}\n" for p in pkgs))
    (state / "log").touch()
    return bin_, state


def _setup_python(bin_: Path, state: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    script = "set -euo pipefail\n" + SETUP_PYTHON + 'echo "PY=$PY"\n'
    r = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, timeout=60,
                       env={"PATH": str(bin_), "BIN": str(bin_), "STATE": str(state)})
    return r, (state / "log").read_text().splitlines()


def test_debian_12_uses_its_python3(tmp_path):
    bin_, state = _image(tmp_path, "3.11.2", ["main"], {"main": ["python3.11"]})
    r, log = _setup_python(bin_, state)
    assert r.returncode == 0, r.stderr
    assert f"PY={bin_}/python3" in r.stdout
    assert log == []     # nothing installed


def test_ubuntu_22_04_gets_python3_11_from_its_own_archive(tmp_path):
    bin_, state = _image(tmp_path, "3.10.12", ["main", "universe"],
                         {"universe": ["python3.11"], "deadsnakes": ["python3.11", "python3.12"]})
    r, log = _setup_python(bin_, state)
    assert r.returncode == 0, r.stderr
    assert f"PY={bin_}/python3.11" in r.stdout
    assert "installing python3.11 from the distribution's repositories" in r.stdout
    assert log == ["apt-get install -y -qq python3.11 python3.11-venv"]
    assert not any("add-apt-repository" in line for line in log)


def test_universe_is_enabled_before_any_ppa(tmp_path):
    bin_, state = _image(tmp_path, "3.10.12", ["main"],
                         {"universe": ["python3.11"], "deadsnakes": ["python3.12"]})
    r, log = _setup_python(bin_, state)
    assert r.returncode == 0, r.stderr
    assert f"PY={bin_}/python3.11" in r.stdout
    assert "add-apt-repository -y universe" in log
    assert not any("deadsnakes" in line for line in log)


def test_ubuntu_20_04_falls_back_to_deadsnakes_last(tmp_path):
    bin_, state = _image(tmp_path, "3.8.10", ["main", "universe"],
                         {"universe": ["python3.9"], "deadsnakes": ["python3.11"]})
    r, log = _setup_python(bin_, state)
    assert r.returncode == 0, r.stderr
    assert f"PY={bin_}/python3.11" in r.stdout
    ppa = log.index("add-apt-repository -y ppa:deadsnakes/ppa")
    assert log.index("add-apt-repository -y universe") < ppa   # the distribution's own first
    assert "deadsnakes PPA" in r.stdout


@pytest.mark.parametrize("spc", [True, False])
def test_no_python_anywhere_fails_with_a_sentence(tmp_path, spc):
    bin_, state = _image(tmp_path, "3.8.10", ["main"], {}, spc=spc)
    r, _ = _setup_python(bin_, state)
    assert r.returncode == 1
    assert "no Python 3.11 or newer could be found or installed" in r.stderr
