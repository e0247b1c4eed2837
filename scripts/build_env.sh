# Sourced by test.sh and sanitize.sh (from the checkout's root): the job count, and ccache as the
# compiler launcher when it is installed. Paths below the checkout are hashed relative to it, so a
# cache filled in one clone serves another.
jobs=$(nproc)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
