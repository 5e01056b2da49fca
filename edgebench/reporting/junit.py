"""Compare verdicts as JUnit XML, so CI systems show a regressed cell as a failed test."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from edgebench.analysis.compare import CellVerdict
from edgebench.reporting.tables import fmt_or_dash

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """Drop characters XML 1.0 cannot carry at all (escaping is left to ElementTree)."""
    return _XML_INVALID.sub("?", text)


def junit_xml(verdicts: Sequence[CellVerdict], suite_name: str) -> str:
    """JUnit XML: one testcase per cell; regressed -> failure, new/missing/not_comparable ->
    skipped, improved/unchanged -> pass. Names are escaped by ElementTree."""
    failures = sum(1 for v in verdicts if v.verdict == "regressed")
    skipped = sum(1 for v in verdicts if v.verdict in ("new", "missing", "not_comparable"))
    suite = ET.Element(
        "testsuite",
        {
            "name": _xml_text(suite_name),
            "tests": str(len(verdicts)),
            "failures": str(failures),
            "errors": "0",
            "skipped": str(skipped),
        },
    )
    for v in verdicts:
        case = ET.SubElement(
            suite, "testcase", {"classname": _xml_text(suite_name), "name": _xml_text(v.cell_id)}
        )
        if v.verdict == "regressed":
            fail = ET.SubElement(
                case, "failure", {"message": _xml_text(v.reason), "type": "regression"}
            )
            unit = v.value_unit
            base, new = fmt_or_dash(v.base_value, ".4g"), fmt_or_dash(v.new_value, ".4g")
            fail.text = (
                f"base {v.metric} {base} {unit}, new {v.metric} {new} {unit}"
                f", ratio {fmt_or_dash(v.ratio, '.3f')}, p={fmt_or_dash(v.p_value, '.2g')}"
            )
        elif v.verdict in ("new", "missing", "not_comparable"):
            ET.SubElement(case, "skipped", {"message": _xml_text(f"{v.verdict}: {v.reason}")})
        else:
            out = ET.SubElement(case, "system-out")
            out.text = _xml_text(f"{v.verdict}: {v.reason}")
    body = ET.tostring(suite, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
