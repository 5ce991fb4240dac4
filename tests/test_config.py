"""The config is validated at start: a misspelled key or a wrong type fails at once, naming the key."""

from __future__ import annotations

import pytest
import yaml
from workflow_utils import REPO, copy_repo, snakemake


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("config"))


def dry_run_with(workdir, change):
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    change(config)
    (workdir / "config/broken.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/broken.yaml", timeout=120)
    return result.returncode, result.stdout + result.stderr


def test_the_shipped_configs_validate(workdir):
    for name in ("config/config.yaml", "config/paper.yaml"):
        result = snakemake(workdir, "-n", "--cores", "1", "--configfile", name, timeout=300)
        assert "ValidationError" not in result.stdout + result.stderr, (result.stdout + result.stderr)[-2000:]


def test_misspelled_key_fails_naming_the_key(workdir):
    code, output = dry_run_with(workdir, lambda c: c["isqa"]["refine"].update(stepz=3))
    assert code != 0
    assert "'stepz' was unexpected" in output or ("stepz" in output and "Additional properties" in output)


def test_wrong_type_fails_naming_the_key(workdir):
    code, output = dry_run_with(workdir, lambda c: c["isqa"]["refine"].update(epsilon="half"))
    assert code != 0
    assert "epsilon" in output and "'half' is not of type 'number'" in output


def test_misspelled_top_level_section_fails(workdir):
    code, output = dry_run_with(workdir, lambda c: c.update(metricz=c.pop("metrics")))
    assert code != 0
    assert "metricz" in output
