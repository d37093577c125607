"""``[remote.buckets]`` (issue 46, credentials by bucket): how each bucket is reached, with keys
only by the name of the environment variable holding them; one-line errors that repeat no value;
only a trusted config may set it; the longest key holding a URL wins; ``omnilab config`` shows
variable names, never a key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnilab._trust import trust
from omnilab.config import BucketSettings, ConfigError, get_settings
from omnilab.media import _remote_fs, _remote_s3
from omnilab.media._remote_object import open_object
from test_config_trust import project, settings_error

__all__ = ["project"]  # the fixture, imported for the trust tests

GOOD = """
[remote.buckets."s3://alpha"]
endpoint_url = "http://127.0.0.1:9000"
region = "eu-west-1"
key_id_env = "ALPHA_KEY_ID"
secret_env = "ALPHA_SECRET"

[remote.buckets."s3://alpha/public"]
anonymous = true

[remote.buckets."gs://pictures"]
token_file = "~/keys/reader.json"

[remote.buckets."az://clips"]
account_name = "omnistore"
account_key_env = "CLIPS_ACCOUNT_KEY"
"""

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _configure(tmp_path: Path, text: str) -> None:
    # conftest names this file in $OMNILAB_CONFIG (a trusted, explicit file)
    (tmp_path / "no-config.toml").write_text(text)
    get_settings.cache_clear()


def _error(tmp_path: Path, text: str) -> str:
    _configure(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        get_settings()
    return str(caught.value)


def test_bucket_settings_are_read_by_canonical_key(tmp_path: Path) -> None:
    _configure(tmp_path, GOOD.replace('"s3://alpha"', '"S3://alpha/"'))
    buckets = get_settings().remote.buckets
    assert sorted(buckets) == ["az://clips", "gs://pictures", "s3://alpha", "s3://alpha/public"]
    alpha = buckets["s3://alpha"]
    assert (alpha.endpoint_url, alpha.region) == ("http://127.0.0.1:9000", "eu-west-1")
    assert alpha.credentials() == ["ALPHA_KEY_ID", "ALPHA_SECRET"]
    assert buckets["s3://alpha/public"].anonymous


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[remote.buckets."ftp://x"]\nregion = "a"', "scheme://bucket with scheme s3, gs or az"),
        ('[remote.buckets."s3:/x"]\nregion = "a"', "scheme://bucket with scheme s3, gs or az"),
        ('[remote.buckets."s3://"]\nregion = "a"', "names its bucket"),
        ('[remote.buckets."s3://x"]\nendpoint = "http://h"', "Extra inputs are not permitted"),
        ('[remote.buckets."s3://x"]\nkey_id_env = "A"', "key_id_env and secret_env go together"),
        ('[remote.buckets."s3://x"]\nendpoint_url = "ftp://h"', "http:// or https:// URL"),
        ('[remote.buckets."s3://x"]\nkey_id_env = "A-B"\nsecret_env = "S"', "not an environment"),
        ('[remote.buckets."gs://x"]\nregion = "eu"', "gs://x: region is not a setting of gs://"),
        ('[remote.buckets."az://x"]\naccount_key_env = "K"', "account_key_env needs account_name"),
        ('[remote.buckets."s3://x"]\nanonymous = true\nprofile = "p"', "take no credentials"),
    ],
)
def test_a_bad_bucket_setting_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    message = _error(tmp_path, text)
    assert says in message and "remote.buckets" in message
    assert message.endswith(f"; fix OMNILAB_REMOTE__BUCKETS or {tmp_path / 'no-config.toml'}")
    assert "\n" not in message and "Traceback" not in message


@pytest.mark.parametrize(
    "text",
    [
        # a secret where a name belongs, or a key by a field that does not exist
        f'[remote.buckets."s3://x"]\nprofile = "{AWS_SECRET}"',
        f'[remote.buckets."s3://x"]\nkey_id_env = "AKIAIOSFODNN7EXAMPLE"\nsecret_env = "{AWS_SECRET}"',
        f'[remote.buckets."s3://x"]\nsecret = "{AWS_SECRET}"',
        f'[remote.buckets."s3://x"]\nendpoint_url = "https://AKIAIOSFODNN7EXAMPLE:{AWS_SECRET}@h"',
        f'[remote.buckets."az://x"]\naccount_name = "{AWS_SECRET}"',
    ],
)
def test_a_secret_in_the_file_is_refused_without_repeating_it(tmp_path: Path, text: str) -> None:
    _configure(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        get_settings()
    message = str(caught.value)
    # pydantic's error, which repeats it, is not chained (nor shown as the context)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert "invalid setting remote.buckets" in message and "\n" not in message
    assert AWS_SECRET not in message and "AKIAIOSFODNN7EXAMPLE" not in message
    assert "wJalr" not in message


def test_the_longest_key_that_holds_a_url_wins(tmp_path: Path) -> None:
    _configure(tmp_path, GOOD)
    found = {
        url: (hit[0] if (hit := _remote_fs.bucket_settings(url)) else None)
        for url in (
            "s3://alpha/videos/v.mp4",
            "s3a://alpha/public/x.wav",
            "s3://alpha/publicity/x.wav",  # a prefix of the name is not a folder
            "s3://alphabet/x.wav",
            "gcs://pictures/p.png",
            "abfs://clips/c.mp4",
            "https://alpha/x",
        )
    }
    assert found == {
        "s3://alpha/videos/v.mp4": "s3://alpha",
        "s3a://alpha/public/x.wav": "s3://alpha/public",
        "s3://alpha/publicity/x.wav": "s3://alpha",
        "s3://alphabet/x.wav": None,
        "gcs://pictures/p.png": "gs://pictures",
        "abfs://clips/c.mp4": "az://clips",
        "https://alpha/x": None,
    }


def test_each_store_gets_its_clients_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALPHA_KEY_ID", "id-value")
    monkeypatch.setenv("ALPHA_SECRET", "secret-value")
    monkeypatch.setenv("CLIPS_ACCOUNT_KEY", "account-key-value")
    _configure(tmp_path, GOOD)
    buckets = get_settings().remote.buckets
    # s3:// is read with botocore's client (omnilab.media._remote_s3), the others with fsspec's.
    s3 = {key: _remote_s3.client_options((key, b)) for key, b in buckets.items() if "s3" in key}
    assert s3 == {
        "s3://alpha": (
            None,
            {
                "endpoint_url": "http://127.0.0.1:9000",
                "region_name": "eu-west-1",
                "aws_access_key_id": "id-value",
                "aws_secret_access_key": "secret-value",
            },
        ),
        "s3://alpha/public": (None, {"unsigned": True}),
    }
    options = {key: _remote_fs._options((key, b)) for key, b in buckets.items() if "s3" not in key}
    assert options == {
        "gs://pictures": {"token": str(Path("~/keys/reader.json").expanduser())},
        "az://clips": {"account_name": "omnistore", "account_key": "account-key-value"},
    }
    profile = BucketSettings(profile="reader", session_token_env=None)
    assert _remote_s3.client_options(("s3://b", profile)) == ("reader", {})


def test_a_named_variable_that_is_unset_is_one_line_naming_it(tmp_path: Path) -> None:
    _configure(tmp_path, GOOD)
    with pytest.raises(Exception) as caught:
        open_object("s3://alpha/videos/v.mp4")
    assert str(caught.value) == (
        "s3://alpha: environment variable ALPHA_KEY_ID is not set (remote.buckets names it "
        "for this bucket's key)"
    )


def test_settings_reach_a_process_that_only_fetches_without_loading_them_otherwise(
    tmp_path: Path,
) -> None:
    # No file sets remote.*: the settings are not loaded (a fetch-only process stays light).
    assert not _remote_fs._remote_configured()
    _configure(tmp_path, GOOD)
    assert _remote_fs._remote_configured()


def test_installed_buckets_win_over_the_processes_own_settings(tmp_path: Path) -> None:
    _configure(tmp_path, GOOD)
    try:
        _remote_fs.use_buckets({"s3://other": BucketSettings(anonymous=True)})
        assert _remote_fs.bucket_settings("s3://alpha/x") is None
        assert _remote_fs.bucket_settings("s3://other/x") == (
            "s3://other",
            BucketSettings(anonymous=True),
        )
    finally:
        _remote_fs.use_buckets(None)
    assert _remote_fs.bucket_settings("s3://alpha/x") is not None


def test_an_untrusted_project_file_may_not_set_buckets(project: Path) -> None:
    (project / "omnilab.toml").write_text(GOOD)
    message = settings_error()
    assert "omnilab.toml (not trusted) sets remote.buckets" in message
    assert "only a trusted config may set" in message and "\n" not in message
    trust(project / "omnilab.toml")
    get_settings.cache_clear()
    assert sorted(get_settings().remote.buckets)[0] == "az://clips"


def test_config_shows_variable_names_never_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from omnilab.cli.main import app

    monkeypatch.setenv("ALPHA_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("ALPHA_SECRET", AWS_SECRET)
    _configure(tmp_path, GOOD)
    for args in (["config"], ["config", "--json"]):
        shown = CliRunner().invoke(app, args, terminal_width=400)
        assert shown.exit_code == 0, shown.output
        assert AWS_SECRET not in shown.output and "AKIAIOSFODNN7EXAMPLE" not in shown.output
    shown = CliRunner().invoke(app, ["config", "--json"])
    alpha = json.loads(shown.output)["remote.buckets"]["s3://alpha"]
    assert (alpha["key_id_env"], alpha["secret_env"]) == ("ALPHA_KEY_ID", "ALPHA_SECRET")


def test_a_hosts_token_goes_to_that_scheme_host_and_prefix_only(tmp_path: Path) -> None:
    _configure(
        tmp_path,
        '[remote.buckets."https://Data.Example.org:8443/bench/"]\nbearer_token_env = "TOKEN"\n'
        '[remote.buckets."s3://x"]\nregion = "eu-west-1"\n',
    )
    assert sorted(get_settings().remote.buckets) == [
        "https://data.example.org:8443/bench",
        "s3://x",
    ]
    hits = {
        url: (hit[0] if (hit := _remote_fs.bucket_settings(url)) else None)
        for url in (
            "https://data.example.org:8443/bench/v.mp4?sig=1",
            "https://user@DATA.example.org:8443/bench/v.mp4",
            "http://data.example.org:8443/bench/v.mp4",  # never over plain HTTP
            "https://data.example.org/bench/v.mp4",  # another port
            "https://data.example.org:8443/benchmarks/v.mp4",
        )
    }
    assert list(hits.values()) == ["https://data.example.org:8443/bench"] * 2 + [None] * 3
    message = _error(tmp_path, '[remote.buckets."https://h"]\nregion = "eu"')
    assert "https://h: region is not a setting of https://" in message
