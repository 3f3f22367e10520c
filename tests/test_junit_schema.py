"""JUnit output validates against both schemas Jenkins ships: the older junit-4.xsd (``<skipped>`` is text only,
children in a fixed order) and the xUnit plugin's junit-10.xsd. The XSDs are in tests/fixtures/junit with their
sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.render.machine.junit import render_junit
from gpuadvisor.rules.gate import gates, run_check

xmlschema = pytest.importorskip("xmlschema", reason="the test extra xmlschema validates JUnit against its XSDs")

SCHEMAS = Path(__file__).parent / "fixtures" / "junit"


@pytest.fixture(scope="module")
def schemas():
    return {name: xmlschema.XMLSchema(str(SCHEMAS / f"{name}.xsd")) for name in ("junit-4", "junit-10")}


def _junit(rig, fail_on: str) -> str:
    res = run_check(rig, fail_on=fail_on)
    return render_junit(
        rig,
        res.findings,
        res.rules,
        failing=lambda f: gates(f.severity, fail_on),
        fail_on=fail_on,
        policy=None,
        time_s=1234.5678,
    )


@pytest.mark.parametrize("name", ["dgx-h100", "4x4090-pcie", "2x3090-nvlink", "dgx2-v100"])
@pytest.mark.parametrize("fail_on", ["info", "warn", "fail"])
def test_every_preset_validates_against_both_schemas(schemas, preset, name, fail_on):
    xml = _junit(preset(name), fail_on)
    for schema_name, schema in schemas.items():
        errors = list(schema.iter_errors(xml))
        assert errors == [], (schema_name, str(errors[0])[:400] if errors else "")


def test_the_4x4090_report_has_each_kind_of_testcase_and_still_validates(schemas, preset):
    xml = _junit(preset("4x4090-pcie"), "fail")
    # failure (GA101), skipped (not checked), system-out (a warning below the gate): all three shapes present
    assert "<failure " in xml and "<skipped>not checked: " in xml and "<system-out>" in xml
    assert "<skipped message=" not in xml
    for schema in schemas.values():
        schema.validate(xml)


def test_a_crashed_rule_error_element_validates(schemas, preset):
    rig = preset("dgx-h100")
    rig.gpus[0].pcie.current_width = "16"  # a string where GA101 compares an int: the rule crashes
    xml = _junit(rig, "warn")
    assert "<error message=" in xml and 'type="rule-crashed"' in xml
    for schema in schemas.values():
        schema.validate(xml)


def test_the_old_skipped_message_attribute_is_what_junit4_rejects(schemas):
    """The shape the report had before: valid for junit-10, invalid for junit-4 (so the test above can fail)."""
    old = (
        '<testsuite name="gpuadvisor" tests="1" failures="0" errors="0" skipped="1" time="0.1">'
        '<testcase classname="host" name="GA405 psu-undersized"><skipped message="not checked"/></testcase>'
        "</testsuite>"
    )
    assert schemas["junit-10"].is_valid(old)
    assert not schemas["junit-4"].is_valid(old)
