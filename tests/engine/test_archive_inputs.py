"""A log archive given on the command line (`tar czf logs.tgz logs/`, a portal's `.zip`) is read as
the files it holds, their paths inside it giving ranks and hosts as a folder's would; an archive
that cannot be opened is skipped with its reason, and the other inputs are still read."""
from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from firstfault.pipeline import diagnose_paths

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = ["dev/real-12-plain-ws4", "real/native-bus-error-plain-ws3", "dev/healthy-lightning-slurm-usr1-requeue-resume-complete"]


def verdict(diagnosis):
    initiating = diagnosis.initiating
    return (diagnosis.primary.failure_id if diagnosis.primary else diagnosis.status,
            initiating.rank if initiating else None, initiating.host if initiating else None)


def packed(case: str, form: str, target: Path) -> Path:
    logs = FIXTURES / case / "logs"
    files = sorted(path for path in logs.rglob("*") if path.is_file())
    if form == "zip":
        path = target / "logs.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in files:
                archive.write(file, f"logs/{file.relative_to(logs)}")
        return path
    path = target / ("logs.tgz" if form == "tgz" else "logs.tar")
    with tarfile.open(path, "w:gz" if form == "tgz" else "w") as archive:
        for file in files:
            archive.add(file, f"logs/{file.relative_to(logs)}")
    return path


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("form", ["tgz", "tar", "zip"])
def test_an_archive_gives_the_diagnosis_of_its_folder(case, form, tmp_path):
    archive = packed(case, form, tmp_path)
    assert verdict(diagnose_paths([str(archive)])) == verdict(diagnose_paths([str(FIXTURES / case / "logs")]))


def test_an_archive_that_cannot_be_opened_is_skipped_with_its_reason(tmp_path):
    good = packed("dev/real-12-plain-ws4", "zip", tmp_path)
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(packed("dev/real-12-plain-ws4", "tgz", tmp_path).read_bytes()[:300])
    diagnosis = diagnose_paths([str(cut), str(good)])
    assert verdict(diagnosis)[:2] == ("user-code-exception", 1)
    (skipped,) = [item for item in diagnosis.inputs.skipped if item.source == str(cut)]
    assert "archive not opened" in skipped.reason and "gzip" in skipped.reason


def test_what_an_archive_leaves_out_is_said(tmp_path):
    path = tmp_path / "logs.tar"
    with tarfile.open(path, "w") as archive:
        data = b"[rank0]: RuntimeError: boom\n"
        info = tarfile.TarInfo("logs/rank0.log")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("logs/latest.log")
        link.type, link.linkname = tarfile.SYMTYPE, "rank0.log"
        archive.addfile(link)
    diagnosis = diagnose_paths([str(path)])
    assert any("logs/latest.log" in item.reason and "not a regular file" in item.reason for item in diagnosis.inputs.skipped)
    assert diagnosis.status == "failure"


def test_a_file_named_like_an_archive_that_is_none_is_read_as_a_log(tmp_path):
    path = tmp_path / "notes.tar"
    path.write_text("[rank2]: RuntimeError: boom\n")
    assert verdict(diagnose_paths([str(path)]))[1] == 2


def test_an_archive_whose_member_leaves_it_is_refused_and_not_to_be_extracted(tmp_path):
    path = tmp_path / "logs.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("../rank0.log", "[rank0]: RuntimeError: boom\n")
    good = tmp_path / "rank1.log"
    good.write_text("[rank1]: RuntimeError: boom\n")
    (skipped,) = [item for item in diagnose_paths([str(path), str(good)]).inputs.skipped if item.source == str(path)]
    assert "points outside the archive" in skipped.reason and "extract" not in skipped.reason
