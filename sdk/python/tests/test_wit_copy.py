"""The WIT the build command uses is the repository's contract (the world
this SDK targets, ``wit/0.7.0``, its ``deps`` symlinks resolved), file for
file and byte for byte."""

from pathlib import Path

from herald_sdk.build import WIT_DIR

REPOSITORY_WIT = Path(__file__).resolve().parents[3] / "wit" / "0.7.0"
SYNC = ("rm -rf sdk/python/src/herald_sdk/wit && cp -rL wit/0.7.0 sdk/python/src/herald_sdk/wit"
        " && rm -rf sdk/python/src/herald_sdk/wit/deps/*/deps")


def wit_files(root: Path) -> dict:
    """``relative path -> bytes`` of the WIT package at ``root``: its own
    files and those of each dependency, but not a dependency's own deps."""
    files = {path.name: path.read_bytes() for path in root.glob("*.wit")}
    for dep in sorted((root / "deps").iterdir()):
        for path in dep.glob("*.wit"):
            files[f"deps/{dep.name}/{path.name}"] = path.read_bytes()
    return files


def test_vendored_wit_is_the_repository_world_with_its_deps():
    assert REPOSITORY_WIT.is_dir(), f"{REPOSITORY_WIT} is missing"
    vendored, repository = wit_files(WIT_DIR), wit_files(REPOSITORY_WIT)
    assert sorted(vendored) == sorted(repository), f"the vendored WIT differs: {SYNC}"
    for name, text in repository.items():
        assert vendored[name] == text, f"{name} differs from the repository's: {SYNC}"
    assert b"package herald:plugin@0.7.0;" in vendored["herald.wit"]


def test_the_package_wit_directory_holds_nothing_else():
    found = sorted(str(path.relative_to(WIT_DIR)) for path in WIT_DIR.rglob("*") if path.is_file())
    assert found == sorted(wit_files(WIT_DIR))
