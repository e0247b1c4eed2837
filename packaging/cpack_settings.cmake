# CPack settings of Mnemo's packages (included by CMakeLists.txt here, which has set
# MNEMO_PACKAGES). Settings that depend on the generator (DEB or TGZ) are in
# cpack_generator_settings.cmake.in, which cpack reads when it runs.

set(CPACK_PACKAGE_NAME mnemo)
set(CPACK_PACKAGE_VENDOR "Mnemo")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_SOURCE_GENERATOR "")
set(CPACK_STRIP_FILES ON)
set(CPACK_THREADS 0)

# One .deb per package; each package is the group of its two components (CMakeLists.txt here).
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(MNEMO_DEB_COMPONENTS "")
foreach(pkg IN LISTS MNEMO_PACKAGES)
  string(TOUPPER ${pkg} _up)
  set(CPACK_COMPONENT_${_up}_GROUP ${pkg})
  set(CPACK_COMPONENT_${_up}-DEB_GROUP ${pkg})
  list(APPEND MNEMO_DEB_COMPONENTS ${pkg} ${pkg}-deb)
endforeach()
# The TGZ: the same programs, modules and data, plus the headers; none of the Debian-only files.
set(MNEMO_TGZ_COMPONENTS ${MNEMO_PACKAGES} dev)

set(CPACK_DEBIAN_PACKAGE_RELEASE ${MNEMO_DEB_RELEASE})
# A cross build (the arm64 toolchain of the edge build) packages for its target, not for the
# machine running cpack: the Debian architecture from the target processor, and dpkg-shlibdeps
# told the same (DEB_HOST_ARCH, set in cpack_generator_settings.cmake.in) so that it reads the
# arm64 libraries' dependency data (multiarch). scripts/edge-arm64-deb.sh makes and runs it.
set(MNEMO_DEB_HOST_ARCH "")
if(CMAKE_CROSSCOMPILING)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    set(MNEMO_DEB_HOST_ARCH arm64)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|amd64)$")
    set(MNEMO_DEB_HOST_ARCH amd64)
  else()
    message(WARNING "packaging: no Debian architecture known for ${CMAKE_SYSTEM_PROCESSOR}; the .deb would be labelled with the build machine's")
  endif()
  if(MNEMO_DEB_HOST_ARCH)
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${MNEMO_DEB_HOST_ARCH})
  endif()
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# Dependencies on Debian's libraries come from dpkg-shlibdeps. libmnemo and libmnemo-kb-proto are
# private libraries of the mnemo package (/usr/lib/mnemo): the other packages find them in the
# build's bin folder and depend on mnemo by name instead.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/bin)
# The arm64 cross build reads libsentencepiece from packages unpacked outside dpkg's database
# (cmake/toolchain-debian-arm64.cmake: libsentencepiece0 is not Multi-Arch: same). dpkg-shlibdeps
# finds the library there, and the package's DEBIAN/shlibs that scripts/edge-arm64.sh unpacks
# next to it (dpkg-shlibdeps looks for DEBIAN/ above a library outside dpkg's database) names the
# dependency: libsentencepiece0 (>= 0.1.97), as a native build gets from dpkg's database.
if(CMAKE_CROSSCOMPILING AND MNEMO_ARM64_EXTRA_PREFIX)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
       ${MNEMO_ARM64_EXTRA_PREFIX}/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
endif()
set(_same_mnemo "mnemo (= ${MNEMO_DEB_VERSION})")

set(CPACK_DEBIAN_MNEMO_PACKAGE_NAME mnemo)
set(CPACK_DEBIAN_MNEMO_DESCRIPTION "language models with memory layers and explicit memories
Mnemo runs language models whose knowledge lives in memory: memory layers
(product-key memories, UltraMem, MIDUS) and Memory3 explicit memories read
from a memory folder or a knowledge server.
.
This package holds the mnemo command, the engine library, the CPU and Vulkan
backends, the model plugins and the bundled default model (a small Memory3
model trained on a synthetic world) with that world's knowledge, questions
and prebuilt bank.")
# The Vulkan backend opens the loader (libvulkan.so.1) at run time, so shlibdeps cannot see it;
# without it the backend reports no device and the CPU backend still works, hence Recommends. A
# device also needs a driver (an ICD): Mesa's, lavapipe included, or a vendor's.
set(CPACK_DEBIAN_MNEMO_PACKAGE_RECOMMENDS "libvulkan1, mesa-vulkan-drivers | vulkan-icd")
set(CPACK_DEBIAN_MNEMO_PACKAGE_SUGGESTS "mnemo-chat, mnemo-kb")

set(CPACK_DEBIAN_MNEMO-CHAT_PACKAGE_NAME mnemo-chat)
set(CPACK_DEBIAN_MNEMO-CHAT_PACKAGE_SECTION x11)
set(CPACK_DEBIAN_MNEMO-CHAT_DESCRIPTION "desktop chat app of the Mnemo inference engine
mnemo-chat is a Qt 6 desktop chat on Mnemo: streaming answers, saved
conversations, a CPU / Vulkan device picker and the references each answer
read from explicit memories. It opens the default model of the mnemo package
when no model folder is given.")
# The QML modules its window imports: shlibdeps cannot see them (they are loaded by the QML engine).
set(CPACK_DEBIAN_MNEMO-CHAT_PACKAGE_DEPENDS
    "${_same_mnemo}, qml6-module-qtquick, qml6-module-qtquick-controls, qml6-module-qtquick-templates, qml6-module-qtquick-layouts, qml6-module-qtquick-window, qml6-module-qtqml-workerscript, qml6-module-qtquick-dialogs, qml6-module-qt-labs-folderlistmodel, qml6-module-qt-labs-settings")

set(CPACK_DEBIAN_MNEMO-KB_PACKAGE_NAME mnemo-kb)
set(CPACK_DEBIAN_MNEMO-KB_PACKAGE_SECTION net)
set(CPACK_DEBIAN_MNEMO-KB_DESCRIPTION "knowledge server of the Mnemo inference engine
mnemo-kb builds versioned banks of explicit memories from a corpus (with a
vector-quantised codec) and serves them over gRPC with TLS, access tokens and
limits, to Mnemo clients that read them while generating.
.
The package runs mnemo-kb serve as a systemd service under its own system
user, configured in /etc/mnemo-kb, with its banks in /var/lib/mnemo-kb.")
set(CPACK_DEBIAN_MNEMO-KB_PACKAGE_DEPENDS "${_same_mnemo}, adduser")
set(CPACK_DEBIAN_MNEMO-KB_PACKAGE_CONTROL_EXTRA
    "${CMAKE_CURRENT_SOURCE_DIR}/mnemo-kb/postinst;${CMAKE_CURRENT_SOURCE_DIR}/mnemo-kb/prerm;${CMAKE_CURRENT_SOURCE_DIR}/mnemo-kb/postrm;${CMAKE_CURRENT_SOURCE_DIR}/mnemo-kb/conffiles")
set(CPACK_DEBIAN_MNEMO-KB_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_MNEMO-BACKEND-CUDA_PACKAGE_NAME mnemo-backend-cuda)
set(CPACK_DEBIAN_MNEMO-BACKEND-CUDA_DESCRIPTION "CUDA backend of the Mnemo inference engine
The CUDA backend module of Mnemo (every op, CUDA graphs, cuBLAS prefill) for
NVIDIA GPUs sm_80 and newer. The CUDA runtime is linked in; the module needs
the NVIDIA driver's libcuda.so.1 and opens cuBLAS when it is installed.")
# The driver library may come from NVIDIA's installer rather than a Debian package, so it is
# recommended, not required, and shlibdeps (which would need it on the build machine) is off.
set(CPACK_DEBIAN_MNEMO-BACKEND-CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_MNEMO-BACKEND-CUDA_PACKAGE_DEPENDS "${_same_mnemo}, libc6 (>= 2.34), libgcc-s1 (>= 3.0), libstdc++6 (>= 12)")
set(CPACK_DEBIAN_MNEMO-BACKEND-CUDA_PACKAGE_RECOMMENDS "libcuda1 | libnvidia-tesla-cuda1, libcublas12")

configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cpack_generator_settings.cmake.in
               ${CMAKE_CURRENT_BINARY_DIR}/cpack_generator_settings.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_BINARY_DIR}/cpack_generator_settings.cmake)
include(CPack)
