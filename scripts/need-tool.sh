#!/bin/sh
# need-tool.sh COMMAND PACKAGE WHAT: make sure COMMAND is on PATH for the tests that use it (WHAT names them).
# Found: say where. Missing: install Debian's PACKAGE when root with apt-get; else, or when that fails, say why
# and go on (those tests skip) -- except under CI (CI set and not empty/0/false/no), where this fails: a green CI
# run always means those checks ran.
cmd=$1 pkg=$2 what=$3 apt=${APT:-apt-get}
if command -v "$cmd" >/dev/null 2>&1; then echo "$cmd: $(command -v "$cmd") ($what will run)"; exit 0; fi
why="not found"
if [ "$(id -u)" != 0 ]; then why="$why, and not root: cannot $apt install $pkg"
elif ! command -v "$apt" >/dev/null 2>&1; then why="$why, and no $apt"
else
  echo "$cmd: installing ($apt install $pkg)..."
  if "$apt" update -qq && DEBIAN_FRONTEND=noninteractive "$apt" install -y -qq --no-install-recommends "$pkg" >/dev/null
  then echo "$cmd: installed ($what will run)"; exit 0; fi
  why="$why, and $apt install $pkg failed (package manager locked or offline?)"
fi
case "$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')" in
  ""|0|false|no) echo "$cmd: $why: $what will be SKIPPED (under CI they fail)";;
  *) echo "$cmd: $why: CI=$CI requires $what, failing" >&2; exit 1;;
esac
