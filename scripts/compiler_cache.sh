# Sourced by test.sh and fuzz.sh: compile through ccache where it is installed (setup.sh installs
# it), so a later run on the same machine, CI's fresh clone after a session included, recompiles
# only what changed. Paths are hashed relative to the checkout and the build folder is left out of
# the hash (CCACHE_NOHASHDIR: the sanitized builds carry line tables, whose folder would otherwise
# be hashed), so a clone in another folder hits the same entries. CCACHE_DISABLE=1 turns it off; a
# launcher already set is kept.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER="${CMAKE_C_COMPILER_LAUNCHER:-ccache}"
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
  export CMAKE_CUDA_COMPILER_LAUNCHER="${CMAKE_CUDA_COMPILER_LAUNCHER:-ccache}"
  export CCACHE_BASEDIR="$PWD"
  export CCACHE_NOHASHDIR=1
fi
