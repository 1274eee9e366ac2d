"""Calibration records as the evaluation reads them: load one, and say in a metric's meta how its judge was calibrated.

A judged metric (``citation_support``, ``claim_recall``) carries in its meta the judge's model id
and prompt version and either ``"calibration": "calibrated"`` with the record's kappa, its 95%
CI, n, grader failures, the examples' digest, the record file's content hash and its date, or
``"calibration": "uncalibrated"`` when none was given. A record made for another judge than the
one that scores the metrics is refused.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.attribution import TokenContainmentJudge
from hoprag.evaluation.calibration import OfflineGrader
from hoprag.files import read_text
from hoprag.jsonl import parse_json

__all__ = ["calibration_for", "calibration_meta", "judged_metric_meta", "load_calibration", "uncalibrated_meta"]

#: the metrics whose value a judge decides
JUDGED_METRICS = ("citation_support", "claim_recall")


def load_calibration(path: str | Path) -> dict[str, Any]:
    """Read a calibration record written by ``hoprag judge calibrate --out``; ``source`` is added
    (the file's path and content hash, which every metric meta citing it records)."""
    text = read_text(path, "calibration file")
    fix = "write it with hoprag judge calibrate CASES --out FILE"
    data = parse_json(text, source=str(path), fix=fix, what="calibration file")
    if not isinstance(data, dict) or not isinstance(data.get("judge"), dict) or "examples_digest" not in data \
            or not isinstance(data.get("overall"), dict):
        raise InputError("not a calibration record (needs 'judge', 'overall' and 'examples_digest')",
                         source=str(path), fix=fix)
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return {**data, "source": {"path": str(path), "sha256": digest}}


def calibration_meta(record: dict[str, Any]) -> dict[str, Any]:
    """What a metric's meta records about its judge's calibration."""
    overall = record["overall"]
    return {"calibration": "calibrated",
            "judge_model_id": record["judge"].get("model_id"), "judge_prompt_version": record["judge"].get("prompt_version"),
            "calibration_digest": record["examples_digest"], "calibration_kappa": overall.get("kappa"),
            "calibration_kappa_ci95": overall.get("kappa_ci95"), "calibration_n": overall.get("n"),
            "calibration_grader_failures": (record.get("grader_failures") or {}).get("count", 0),
            "calibration_file_sha256": (record.get("source") or {}).get("sha256"),
            "calibration_date": record.get("date")}


def uncalibrated_meta(model_id: str, prompt_version: str) -> dict[str, Any]:
    """A judged metric's meta when no calibration of its judge was given: said, not left out."""
    return {"calibration": "uncalibrated", "judge_model_id": model_id, "judge_prompt_version": prompt_version}


def calibration_for(judge: Any, record: dict[str, Any] | None, *, source: str = "calibration") -> dict[str, Any]:
    """The meta of metrics scored by ``judge`` (a :class:`TokenContainmentJudge` or anything with
    ``model_id``/``prompt_version``): calibrated by ``record`` when it is that judge's calibration,
    ``uncalibrated`` without one; a record of another judge is refused."""
    if record is None:
        return uncalibrated_meta(judge.model_id, judge.prompt_version)
    wanted = OfflineGrader(containment=judge).model_id if isinstance(judge, TokenContainmentJudge) else judge.model_id
    got = record["judge"].get("model_id")
    if got != wanted or record["judge"].get("prompt_version") != judge.prompt_version:
        raise ConfigError(
            f"{source}: calibration of judge {got!r} (prompt {record['judge'].get('prompt_version')!r}), but the "
            f"metrics are scored by {wanted!r} (prompt {judge.prompt_version!r}). Fix: calibrate that judge with "
            "hoprag judge calibrate CASES --llm offline --out FILE and pass that file"
        )
    return calibration_meta(record)


def judged_metric_meta(judge: Any, record: dict[str, Any] | None, *, source: str = "calibration") -> dict[str, dict[str, Any]]:
    """``{metric: meta}`` for every judged metric scored by ``judge``."""
    meta = calibration_for(judge, record, source=source)
    return {name: dict(meta) for name in JUDGED_METRICS}
