"""The WIT the build command uses is the repository's contract (the version
this SDK targets, ``wit/0.2.0/herald.wit``), byte for byte."""

from pathlib import Path

from herald_sdk.build import WIT_DIR

REPOSITORY_WIT = Path(__file__).resolve().parents[3] / "wit" / "0.2.0" / "herald.wit"


def test_vendored_wit_is_byte_identical_to_the_repository_copy():
    assert REPOSITORY_WIT.is_file(), f"{REPOSITORY_WIT} is missing"
    vendored = (WIT_DIR / "herald.wit").read_bytes()
    assert vendored == REPOSITORY_WIT.read_bytes(), (
        "sdk/python/src/herald_sdk/wit/herald.wit differs from wit/0.2.0/herald.wit: "
        "cp wit/0.2.0/herald.wit sdk/python/src/herald_sdk/wit/herald.wit")


def test_vendored_wit_is_the_only_file_in_the_package_wit_directory():
    assert sorted(path.name for path in WIT_DIR.iterdir()) == ["herald.wit"]
