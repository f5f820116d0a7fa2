"""The build command's checks before componentize-py runs (the full build is
exercised end to end by host/tests/cli/sdk_python.rs on the example plugin)."""

import textwrap

import pytest

from herald_sdk import handler as handler_module
from herald_sdk.build import BuildError, build, main


@pytest.fixture(autouse=True)
def no_export():
    handler_module._exported = None
    yield
    handler_module._exported = None


def write(path, source):
    path.write_text(textwrap.dedent(source))
    return path


def test_a_module_that_exports_nothing_is_refused(tmp_path):
    app = write(tmp_path / "lonely.py", "import herald_sdk\n")
    with pytest.raises(BuildError, match="checking it natively failed: RuntimeError: no plugin exported"):
        build(app, tmp_path / "out.wasm")
    assert not (tmp_path / "out.wasm").exists()


def test_a_manifest_the_host_would_refuse_is_reported(tmp_path, capsys):
    app = write(tmp_path / "bad_name.py", """
        import herald_sdk
        class Bad(herald_sdk.Handler):
            @classmethod
            def manifest(cls):
                return herald_sdk.Manifest("Bad Name", "1")
        herald_sdk.export_plugin(Bad)
    """)
    assert main(["build", str(app), "-o", str(tmp_path / "out.wasm")]) == 1
    error = capsys.readouterr().err
    assert "manifest: name 'Bad Name' must be lowercase letters" in error
    assert "manifest: no subscription" in error


def test_an_app_that_raises_on_import_is_reported_with_its_traceback(tmp_path, capsys):
    app = write(tmp_path / "crashing.py", "import herald_sdk\nraise ValueError('typo in config')\n")
    assert main(["build", str(app), "-o", str(tmp_path / "out.wasm")]) == 1
    error = capsys.readouterr().err
    assert "checking it natively failed: ValueError: typo in config" in error
    assert 'crashing.py", line 2' in error


@pytest.mark.parametrize("name", ["plugin.py", "wit_world.py", "my-app.py", "app.txt"])
def test_unusable_module_names_are_refused(tmp_path, name):
    app = write(tmp_path / name, "")
    with pytest.raises(BuildError):
        build(app, tmp_path / "out.wasm")


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(BuildError, match="expected an existing .py file"):
        build(tmp_path / "absent.py", tmp_path / "out.wasm")


def test_checking_the_module_writes_no_bytecode_next_to_it(tmp_path):
    app = write(tmp_path / "quiet.py", """
        import herald_sdk
        class Quiet(herald_sdk.Handler):
            @classmethod
            def manifest(cls):
                return herald_sdk.Manifest("Not Valid", "1")
        herald_sdk.export_plugin(Quiet)
    """)
    with pytest.raises(BuildError, match="must be lowercase"):
        build(app, tmp_path / "out.wasm")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["quiet.py"]


def test_the_entry_module_keeps_the_app_directory_clean_and_routes_urllib():
    from herald_sdk.build import ENTRY_SOURCE

    entry = ENTRY_SOURCE.format(app="app")
    assert entry.index("sys.dont_write_bytecode = True") < entry.index("import app")
    assert 'if "urllib.request" in sys.modules:' in entry and "install_urllib()" in entry
