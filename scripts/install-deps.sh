#!/usr/bin/env bash
# Installs every Debian 12 package Mnemo needs. Idempotent: packages already present are left
# alone and `apt-get update` runs once per call only when something is missing.
#   scripts/install-deps.sh           build + run (compiler, CMake, libraries)
#   scripts/install-deps.sh --tests   also the test tools (GoogleTest, Python references, Clang
#                                     for the sanitizer and fuzz builds)
#   scripts/install-deps.sh --train   also what retraining the default model needs
#                                     (tools/train/make_default_model.sh: PyTorch, an optimised BLAS)
set -euo pipefail

want_tests=0
want_train=0
for arg in "$@"; do
  case "$arg" in
    --tests) want_tests=1 ;;
    --train) want_train=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (expected --tests or --train)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config ccache git
  libsentencepiece-dev
  libgtest-dev   # GoogleTest is also needed to configure the tests target
  libvulkan-dev glslc   # Vulkan backend: headers + loader, GLSL -> SPIR-V compiler (build time)
  mesa-vulkan-drivers   # lavapipe: a Vulkan device on the CPU, so the Vulkan backend runs anywhere
  libfaiss-dev   # FAISS 1.7.3 (static, with its BLAS/LAPACK/OpenMP deps): mnemo-kb trains the memory codec
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc   # the knowledge server's protocol
  libssl-dev     # mnemo-kb hashes its access tokens (SHA-256) with OpenSSL's libcrypto
  librados-dev   # mnemo-kb's bank on a Ceph RADOS pool (--store rados://POOL), docs/kb-storage.md
  libcpp-httplib-dev   # `mnemo serve`, the OpenAI-compatible HTTP API (cpp-httplib 0.11, with OpenSSL for TLS)
  # The desktop app mnemo-chat (app/gui, Qt 6.4): headers and tools, then the QML modules its
  # window imports. The -dev packages do not pull those in, and a missing one fails only when the
  # QML loads (tests/gui/test_main_window.cpp loads the window and opens its dialogs). The file
  # dialogs' own QML imports Qt.labs.folderlistmodel, which qml6-module-qtquick-dialogs does not
  # depend on.
  qt6-base-dev qt6-declarative-dev qt6-declarative-dev-tools
  qml6-module-qtquick qml6-module-qtquick-controls qml6-module-qtquick-templates
  qml6-module-qtquick-layouts qml6-module-qtquick-window qml6-module-qtqml-workerscript
  qml6-module-qtquick-dialogs qml6-module-qt-labs-folderlistmodel qml6-module-qt-labs-settings
)
if [ "$want_tests" = 1 ]; then
  packages+=(
    clang libclang-rt-14-dev            # ASan/UBSan build and libFuzzer targets
    python3 python3-numpy python3-sentencepiece python3-regex   # reference implementations
    python3-torch python3-matplotlib   # memory-layer references and converters; benchmark plots
    python3-faiss   # FAISS 1.7.3: trains the Memory3 memory codec (tools/reference/vq_codec.py)
    openssl         # the knowledge-server tests make their own TLS certificates
    qml6-module-qttest   # QtQuick.Test, for QML test cases of the GUI
    fonts-dejavu-core    # text renders in the GUI tests' offscreen screenshots
    dpkg-dev systemd     # the packaging test: dpkg-shlibdeps (cpack), systemd-analyze verify (tests/packaging)
    curl perl            # `mnemo serve`'s SSE stream checked byte for byte (tests/serve/openai_client/run.sh)
    xvfb xdotool x11-apps imagemagick   # mnemo-chat driven in a real X window, screenshots (tests/gui/xvfb_session.sh)
    ceph-mon ceph-mgr ceph-osd ceph-common   # a one-machine Ceph cluster for the RADOS bank tests (tests/kb/ceph/)
  )
fi

if [ "$want_train" = 1 ]; then
  packages+=(
    python3 python3-numpy python3-torch python3-sentencepiece python3-faiss
    libopenblas0-pthread   # torch on the reference BLAS is ~5x slower; training loads OpenBLAS itself
                           # (LD_LIBRARY_PATH), the system keeps the reference BLAS (see below)
  )
fi

# The official OpenAI client's test (tests/serve/openai_client) runs on Node.js and installs the
# client from the npm registry into the build tree. A machine that has Node.js already (e.g. from
# NodeSource) keeps it; Debian's nodejs and npm are installed only where there is none.
if [ "$want_tests" = 1 ] && ! command -v node >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [ "$want_train" = 1 ]; then
  # Installing OpenBLAS makes it the system's libblas.so.3. mnemo-kb decodes memories bit for bit
  # as FAISS does on the reference BLAS (and checks it), so the reference BLAS stays the default;
  # tools/train/make_default_model.sh points only its own Python at OpenBLAS.
  arch=$(uname -m)-linux-gnu
  "${sudo_cmd[@]}" update-alternatives --set "libblas.so.3-$arch" "/usr/lib/$arch/blas/libblas.so.3" >/dev/null
  "${sudo_cmd[@]}" update-alternatives --set "liblapack.so.3-$arch" "/usr/lib/$arch/lapack/liblapack.so.3" >/dev/null
fi
