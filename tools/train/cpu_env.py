"""Process environment for fast CPU training; import before numpy/torch (they read it at load).

Measured on the 2-core VM (Intel Xeon with AVX-512, KVM), Debian python3-torch 1.13 + OpenBLAS 0.3.21:
* OpenBLAS's DYNAMIC_ARCH detection picks the generic `Prescott` kernels on this CPU, ~25 GFLOP/s
  for one thread; OPENBLAS_CORETYPE=SkylakeX (AVX-512) gives 130-250 GFLOP/s and a 2.7x faster
  training step (1.7 s instead of 4.5 s for the default model). Set only when the CPU has the
  AVX-512 subsets those kernels use and the variable is not already set.
* OMP_WAIT_POLICY=ACTIVE with torch.set_num_threads(1) is the fastest setting (docs/performance.md;
  with two intra-op threads the step is 1.45x slower here); OpenBLAS still uses both cores.
"""

import os

_SKYLAKEX_FLAGS = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")


def _cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def configure() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
    if "OPENBLAS_CORETYPE" not in os.environ and all(f in _cpu_flags() for f in _SKYLAKEX_FLAGS):
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"


configure()
