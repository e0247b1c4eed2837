# Cross-compiling for arm64 (aarch64) on a Debian 12 amd64 host with crossbuild-essential-arm64
# and arm64 multiarch libraries (dpkg --add-architecture arm64; libvulkan-dev:arm64 ...), as
# scripts/edge-arm64.sh sets up. Tests run through qemu-user-static, so ctest and
# gtest_discover_tests work on the host without binfmt_misc being registered.
#
# Debian's multiarch layout: arm64 libraries in /usr/lib/aarch64-linux-gnu, headers shared in
# /usr/include (plus /usr/include/aarch64-linux-gnu), so no sysroot: CMAKE_LIBRARY_ARCHITECTURE
# makes find_library look in the arm64 folder, and pkg-config is pointed at the arm64 .pc files.
# Host tools (glslc, protoc, grpc_cpp_plugin) are amd64 programs from PATH, as they must be.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(MNEMO_ARM64_TRIPLET aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${MNEMO_ARM64_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${MNEMO_ARM64_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${MNEMO_ARM64_TRIPLET})

# Packages that cannot be installed side by side with their amd64 version (libsentencepiece-dev
# is not Multi-Arch: same) are unpacked by scripts/edge-arm64.sh into this prefix instead.
set(MNEMO_ARM64_EXTRA_PREFIX "/opt/mnemo-arm64" CACHE PATH "Unpacked arm64 packages that are not co-installable")

# pkg-config: only arm64 .pc files (and the unpacked extras), never the host's.
set(ENV{PKG_CONFIG_LIBDIR}
    "${MNEMO_ARM64_EXTRA_PREFIX}/usr/lib/${MNEMO_ARM64_TRIPLET}/pkgconfig:/usr/lib/${MNEMO_ARM64_TRIPLET}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
list(APPEND CMAKE_PREFIX_PATH "${MNEMO_ARM64_EXTRA_PREFIX}/usr")

# Libraries and packages: the arm64 folders only; programs: the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${MNEMO_ARM64_TRIPLET} "${MNEMO_ARM64_EXTRA_PREFIX}" /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Runs arm64 test programs (ctest, gtest_discover_tests) on the host. `-L /`: the dynamic loader,
# libc and every other library come from the host's arm64 multiarch packages (libc6:arm64 and the
# :arm64 libraries above), so ld.so and libc.so.6 are always the same glibc build.
# Not `-L /usr/aarch64-linux-gnu` (libc6-arm64-cross): qemu takes a path from the -L prefix only
# when it exists there, so ld.so came from the cross package (2.36-8) while libc.so.6, found
# through /etc/ld.so.cache in /lib/aarch64-linux-gnu, came from libc6:arm64 (2.36-9+deb12u14).
# The two disagree on the layout of ld.so's private data, and the first pthread_create looped
# forever walking the thread-stack cache list: every run with a second thread hung
# (docs/edge.md, "Threads under emulation").
find_program(MNEMO_QEMU_AARCH64 qemu-aarch64-static)
if(MNEMO_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${MNEMO_QEMU_AARCH64} -L /)
endif()
