from __future__ import annotations

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.fleet.hostlist import expand, read_nodes_file


def test_slurm_hostlists():
    assert expand("node[01-03,07]") == ["node01", "node02", "node03", "node07"]
    assert expand("rack[1-2]-gpu[8-9],login") == ["rack1-gpu8", "rack1-gpu9", "rack2-gpu8", "rack2-gpu9", "login"]
    assert expand("a,b,a") == ["a", "b"]
    assert len(expand("node[001-128]")) == 128 and expand("node[001-128]")[-1] == "node128"


@pytest.mark.parametrize("bad", ["node[3-1]", "node[01-", "node]x", "node[a-b]"])
def test_bad_hostlists_are_one_line_errors(bad):
    with pytest.raises(InputError, match="--expect"):
        expand(bad)


def test_nodes_file(tmp_path):
    p = tmp_path / "nodes.txt"
    p.write_text("# rack 1\nnode[01-02]\nnode09  # spare\n\n")
    assert read_nodes_file(str(p)) == ["node01", "node02", "node09"]


def test_a_name_of_thousands_of_bracket_groups_is_one_line_not_a_crash(capsys, tmp_path):
    """It used to recurse once per group (RecursionError: an internal error); now it is refused as bad input."""
    from gpuadvisor.cli import main

    with pytest.raises(SystemExit) as e:
        main(["fleet", str(tmp_path), "--expect", "a" + "[1]" * 5000])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "bracket groups" in err and err.count("\n") == 1, err
    assert expand("a[1][2]-b[3-4]") == ["a12-b3", "a12-b4"]
