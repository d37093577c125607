"""The installed llama.cpp libraries carry no instruction outside the portable baseline.

A native build (``GGML_NATIVE``) uses whatever the build machine reports (AVX-512, AMX) and
dies of SIGILL on a CPU that traps them; the portable build targets AVX2/FMA/F16C on x86-64 and
plain ARMv8-A on Arm. The disassembly of every shipped ``.so`` is scanned for what lies beyond.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from omnilab.models.providers.local_runtime import reinstall_command, runtime_library

# x86-64, AT&T syntax (objdump's default). AVX-512: zmm registers, the upper 16 xmm/ymm
# registers, opmask registers, and EVEX-only instructions; AMX: tile instructions; VNNI and
# BF16 dot products (AVX512-VNNI or AVX-VNNI) are not in AVX2 either.
_X86_BEYOND = re.compile(
    r"%zmm\d+|%[xy]mm(?:1[6-9]|2\d|3[01])\b|%k[0-7]\b|%tmm\d\b"
    r"|:\t(?:\{\w+\}\s*)?(?:tileloadd\w*|tilestored|tilezero|tilerelease|ldtilecfg|sttilecfg"
    r"|tdp\w+|vpternlog[dq]|vperm[it]2\w+|vpro[lr]v?[dq]|vrndscale\w+|vscalef\w+|vgetexp\w+"
    r"|vrcp14\w+|vrsqrt14\w+|vpconflict\w|vplzcnt\w|vp?compress\w+|vp?expand\w+|vpopcnt\w"
    r"|vpmadd52\w+|vpdpbu?s[sd]s?|vpdpws[sd]s?|vdpbf16ps|vcvtne2?ps2bf16|k(?:mov|and|or|xor"
    r"|xnor|not|shift\w*|unpck\w*|test|ortest|add)[bwdq])\b"
)
# AArch64: SVE/SME registers and predicates, dot products and matrix multiplies (v8.2+).
_ARM_BEYOND = re.compile(
    r"\bz(?:[12]?\d|3[01])\.[bhsdq]\b|\bp(?:1[0-5]|\d)/[mz]\b|\bza\b"
    r"|:\t(?:sdot|udot|usdot|sudot|smmla|ummla|usmmla|bfmmla|bfdot|bfcvt\w*)\b"
)
# What the baseline itself uses, so an empty scan cannot pass by reading nothing.
_X86_BASELINE = re.compile(r":\tvfmadd\w+\s+%ymm")


def beyond_baseline(disassembly: str, machine: str) -> Counter[str]:
    """The instructions of ``disassembly`` (``objdump -d --no-show-raw-insn``: lines such as
    ``  1234:\tvaddps %zmm1,%zmm2,%zmm3``) that a portable build for ``machine`` must not have,
    counted by mnemonic. One regex pass over the whole text: millions of lines."""
    pattern = _X86_BEYOND if machine in ("x86_64", "amd64") else _ARM_BEYOND
    found: Counter[str] = Counter()
    for match in pattern.finditer(disassembly):
        start = disassembly.rfind("\n", 0, match.start()) + 1
        _, _, instruction = disassembly[start : disassembly.find("\n", match.end())].partition(
            ":\t"
        )
        found[instruction.split()[0] if instruction.split() else "?"] += 1
    return found


def _listing(instructions: list[str]) -> str:
    return "".join(f"  {i:x}:\t{text}\n" for i, text in enumerate(instructions))


def test_the_scan_tells_baseline_from_beyond() -> None:
    x86 = [
        "vfmadd231ps %ymm1,%ymm2,%ymm0",
        "vpmaddubsw %ymm3,%ymm4,%ymm5",
        "vcvtph2ps %xmm0,%ymm1",
        "tileloadd (%rsi,%rdx,1),%tmm0",
        "tdpbssd %tmm2,%tmm1,%tmm0",
        "vaddps %zmm1,%zmm2,%zmm3",
        "vmovups %ymm17,(%rax)",
        "vpdpbusd %ymm1,%ymm2,%ymm3",
        "kmovw %k1,%eax",
        "vpternlogd $0xff,%ymm0,%ymm0,%ymm0",
    ]
    found = beyond_baseline(_listing(x86), "x86_64")
    assert set(found) == {
        "tileloadd",
        "tdpbssd",
        "vaddps",
        "vmovups",
        "vpdpbusd",
        "kmovw",
        "vpternlogd",
    }
    arm = ["fmla v0.4s, v1.4s, v2.4s", "ld1w {z0.s}, p0/z, [x0]", "sdot v0.4s, v1.16b, v2.16b"]
    assert set(beyond_baseline(_listing(arm), "aarch64")) == {"ld1w", "sdot"}


@pytest.mark.slow
def test_installed_runtime_has_no_instruction_beyond_the_baseline() -> None:
    lib = runtime_library()
    if lib is None:
        pytest.skip("llama-cpp-python is not installed (the [local] extra)")
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump is not installed (binutils): cannot scan the runtime's libraries")
    machine = platform.machine().lower()
    # libfoo.so -> libfoo.so.0 -> libfoo.so.0.25.3: each file once.
    libraries = sorted({p.resolve() for p in lib.iterdir() if p.is_file() and ".so" in p.name})
    assert libraries, f"no shared libraries in {lib}"
    found: dict[str, Counter[str]] = {}
    baseline_seen = 0
    for so in libraries:
        done = subprocess.run(
            [objdump, "-d", "--no-show-raw-insn", str(so)],
            capture_output=True,
            text=True,
            check=True,
        )
        baseline_seen += sum(1 for _ in _X86_BASELINE.finditer(done.stdout))
        beyond = beyond_baseline(done.stdout, machine)
        if beyond:
            found[so.name] = beyond
    assert not found, (
        "the embedded runtime was built for this CPU, not for any CPU: "
        + "; ".join(f"{name}: {dict(c.most_common(5))}" for name, c in found.items())
        + f"; reinstall it: {reinstall_command()}"
    )
    if machine in ("x86_64", "amd64"):
        # The chosen baseline: AVX2 + FMA kernels are there (not a plain SSE build either).
        assert baseline_seen > 100, f"no AVX2/FMA kernels found in {Path(lib)}"
