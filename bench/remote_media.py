"""Inputs at URLs: fetching videos from a local S3 server, cold and warm, against the AWS client.

Usage::

    python bench/remote_media.py [--tasks 50] [--seconds 20] [--concurrency 8] [--rounds 3]
                                 [--large-objects 0] [--large-mib 64] [--baseline SRC]

Starts moto's S3 server (``moto_server``, the real S3 wire protocol) on 127.0.0.1 in its own
process, uploads ``--tasks`` generated H.264+AAC videos, then runs, each in a fresh process,
interleaved over ``--rounds``:

- ``omnilab cold``: :func:`omnilab.media.remote.fetch` of every object into an empty media cache
  (``--concurrency`` at a time, as that many eval tasks on one node would);
- ``omnilab warm``: the same again on the filled cache (the bytes downloaded must be zero);
- ``aws client``: boto3's ``download_file`` of the same objects to a folder, same concurrency
  (what a user's own script would do; the floor for the cold case).

With ``--large-objects N``, two more rows (``omnilab cold, large`` and ``aws client, large``)
fetch N objects of ``--large-mib`` MiB each (random bytes, uploaded in parts as the AWS client
does past 8 MiB: their ETag is no MD5), as hour-long videos would be; the default rows are the
same either way.

``--baseline SRC`` adds ``omnilab cold, baseline`` rows (and ``..., large`` with large objects):
the same cold fetch with ``SRC`` (the ``src`` folder of another checkout, e.g. ``git archive
COMMIT src | tar -x -C DIR``) first on ``PYTHONPATH``, in the same interleaved rounds, for
before/after figures against one server.

Each contender first runs once unmeasured, so that all run with compiled bytecode (in a
private ``PYTHONPYCACHEPREFIX``), as installed packages do.

Prints wall and CPU seconds (the child's user+system) and bytes downloaded per row, and the cold
overhead against the AWS client (target: at most 1.2x wall). Needs ``pip install -e '.[dev]'``
(s3fs and moto[server]). On a shared machine compare rows of the same run only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BUCKET = "bench-media"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(endpoint: str) -> dict[str, str]:
    return {
        **os.environ,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def _wait(port: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"moto_server did not start on port {port}")


def _upload(tasks: int, seconds: float, folder: Path) -> list[str]:
    import boto3

    from omnilab.media import synth

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    keys = []
    for i in range(tasks):
        path = folder / f"v{i:03d}.mp4"
        synth.make_video(path, duration=seconds, size=(640, 360))
        key = f"videos/{path.name}"
        s3.upload_file(str(path), BUCKET, key)
        keys.append(key)
    return keys


def _upload_large(count: int, mib: int, folder: Path) -> list[str]:
    import boto3

    s3 = boto3.client("s3")
    keys = []
    for i in range(count):
        path = folder / f"large{i:02d}.bin"
        with path.open("wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        key = f"large/{path.name}"
        s3.upload_file(str(path), BUCKET, key)
        path.unlink()
        keys.append(key)
    return keys


def _child(role: str, keys: list[str], concurrency: int, cache: Path, out: Path) -> None:
    """One measured contender (in its own process)."""
    started = time.perf_counter()
    if role == "aws":
        import boto3

        s3 = boto3.client("s3")

        def one(key: str) -> int:
            dest = out / key.replace("/", "_")
            s3.download_file(BUCKET, key, str(dest))
            return dest.stat().st_size

    else:
        from omnilab.media.cache import MediaCache
        from omnilab.media.remote import fetch

        store = MediaCache(cache, max_bytes=1 << 40)

        def one(key: str) -> int:
            return fetch(f"s3://{BUCKET}/{key}", cache=store).downloaded

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        downloaded = sum(pool.map(one, keys))
    wall = time.perf_counter() - started
    use = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"wall": wall, "cpu": use.ru_utime + use.ru_stime, "bytes": downloaded}))


def _measure(
    role: str, args: argparse.Namespace, env: dict[str, str], cache: Path, keys: str = ""
) -> dict[str, float]:
    if role == "baseline":  # omnilab, from the other checkout's source
        env = {**env, "PYTHONPATH": os.pathsep.join([args.baseline, env.get("PYTHONPATH", "")])}
        role = "omnilab"
    out = Path(tempfile.mkdtemp(prefix="omnilab-bench-aws-"))
    try:
        cmd = [sys.executable, __file__, "--child", role, "--keys", keys or args.keys_file]
        cmd += ["--concurrency", str(args.concurrency), "--cache", str(cache), "--out", str(out)]
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{role} failed:\n{done.stderr[-2000:]}")
        row: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
        row["process_wall"] = time.perf_counter() - started
        return row
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each video.")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--large-objects", type=int, default=0, help="Add rows fetching this many large objects."
    )
    parser.add_argument("--large-mib", type=int, default=64, help="Size of each large object.")
    parser.add_argument(
        "--baseline", help="Another checkout's src folder: adds 'omnilab cold, baseline' rows."
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--keys", dest="keys_file", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        keys = json.loads(Path(args.keys_file).read_text())
        _child(args.child, keys, args.concurrency, Path(args.cache), Path(args.out))
        return
    moto = shutil.which("moto_server") or str(Path(sys.executable).with_name("moto_server"))
    port = _port()
    endpoint = f"http://127.0.0.1:{port}"
    env = _env(endpoint)
    os.environ.update(env)
    work = Path(tempfile.mkdtemp(prefix="omnilab-bench-remote-"))
    server = subprocess.Popen(
        [moto, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        keys = _upload(args.tasks, args.seconds, work)
        total = sum((work / Path(k).name).stat().st_size for k in keys)
        args.keys_file = str(work / "keys.json")
        Path(args.keys_file).write_text(json.dumps(keys))
        print(f"{len(keys)} videos, {total / 2**20:.1f} MiB in s3://{BUCKET} ({endpoint})")
        large = ""
        if args.large_objects > 0:
            large = str(work / "large.json")
            keys_large = _upload_large(args.large_objects, args.large_mib, work)
            Path(large).write_text(json.dumps(keys_large))
            print(f"{len(keys_large)} large objects, {args.large_mib} MiB each")
        rows: dict[str, list[dict[str, float]]] = {
            "omnilab cold": [],
            "omnilab warm": [],
            "aws client": [],
        }
        if large:
            rows |= {"omnilab cold, large": [], "aws client, large": []}
        if args.baseline:
            args.baseline = str(Path(args.baseline).resolve())
            rows["omnilab cold, baseline"] = []
            if large:
                rows["omnilab cold, large, baseline"] = []
        # Each contender runs as an installed package does, its bytecode compiled: a private
        # bytecode folder (a source checkout under PYTHONDONTWRITEBYTECODE would compile
        # omnilab's modules anew in every process, while boto3's and s3fs's come compiled),
        # filled by one unmeasured run of each.
        env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
        for role in ("omnilab", "aws", "baseline") if args.baseline else ("omnilab", "aws"):
            _measure(role, args, env, work / "warm-up")
        shutil.rmtree(work / "warm-up", ignore_errors=True)
        load_start = os.getloadavg()[0]
        for _ in range(args.rounds):
            cache = work / f"cache-{time.monotonic_ns()}"
            rows["omnilab cold"].append(_measure("omnilab", args, env, cache))
            rows["omnilab warm"].append(_measure("omnilab", args, env, cache))
            rows["aws client"].append(_measure("aws", args, env, cache))
            shutil.rmtree(cache, ignore_errors=True)
            if args.baseline:
                rows["omnilab cold, baseline"].append(_measure("baseline", args, env, cache))
                shutil.rmtree(cache, ignore_errors=True)
            if large:
                rows["omnilab cold, large"].append(_measure("omnilab", args, env, cache, large))
                rows["aws client, large"].append(_measure("aws", args, env, cache, large))
                shutil.rmtree(cache, ignore_errors=True)
            if large and args.baseline:
                row = _measure("baseline", args, env, cache, large)
                rows["omnilab cold, large, baseline"].append(row)
                shutil.rmtree(cache, ignore_errors=True)
        print(
            f"{'':29} {'wall s':>8} {'cpu s':>8} {'MiB downloaded':>15}  (median of {args.rounds})"
        )
        print(f"load average (1 min): {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} now")
        med = {
            name: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "bytes")}
            for name, rs in rows.items()
        }
        for name, m in med.items():
            print(f"{name:29} {m['wall']:8.2f} {m['cpu']:8.2f} {m['bytes'] / 2**20:15.1f}")
        for suffix in ("", ", large") if large else ("",):
            aws = med[f"aws client{suffix}"]
            for who in ("", ", baseline") if args.baseline else ("",):
                cold = med[f"omnilab cold{suffix}{who}"]
                print(
                    f"cold{who} overhead against the AWS client{suffix}: "
                    f"{cold['wall'] / aws['wall']:.2f}x wall, {cold['cpu'] / aws['cpu']:.2f}x cpu "
                    "(target <= 1.2x)"
                )
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
