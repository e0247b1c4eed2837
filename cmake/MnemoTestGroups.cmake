# ctest tests for a GoogleTest executable, one per group of its tests instead of one per TEST
# (gtest_discover_tests): starting mnemo_tests costs 0.1-0.25 s in the release build and 0.25-0.55 s
# under AddressSanitizer (idle / loaded 2-core machine), which over the ~4,700 one-test processes
# of CI's two passes added many minutes.
#
#   mnemo_add_test_groups(<target> [EXCLUDE <gtest pattern>...] [COVERED_BACKENDS <name>...]
#                         [ENVIRONMENT <VAR=value>...] [TIMEOUT <s>] [SKIP_STATUS <code>])
#
# After every link of <target>, its --gtest_list_tests is read (POST_BUILD, like
# gtest_discover_tests) and one ctest test is written per test suite, named after the suite
# ("Session", "Models/BackendModels"), running `<target> --gtest_filter=<the suite's tests>`. A
# suite's tests whose names say they run on the Vulkan or the CUDA backend ("/vulkan",
# "__vulkan0", "VulkanBackend.") form a group of their own, "<suite>:vulkan" / "<suite>:cuda",
# so that a group is skipped as a whole when its backend has no device; a suite named after the
# backend keeps its name. Labels: `unit`, plus `vulkan` / `cuda` for those groups.
#
# EXCLUDE: gtest patterns (only a trailing * is supported) of tests that other ctest tests run
# (the conformance cases, one test per backend in tests/CMakeLists.txt). COVERED_BACKENDS: the
# backends whose conformance cases (Conformance/BackendOps.Run/<backend>...) have such a test;
# any other backend the listing shows (a module found through MNEMO_BACKEND_PATH) gets
# "<backend>.conformance" here, so no case goes unrun.
#
# Every group runs with MNEMO_TEST_SKIP_STATUS=<SKIP_STATUS> and that SKIP_RETURN_CODE: the test
# program exits with it when every test of the group skipped (tests/gtest_exit_status.cpp), so
# ctest reports the group as skipped; a group with some tests skipped passes, and its output lists
# them. A failing group's output ends with the names of its failed tests. COST is the group's
# number of tests (ctest -j starts the costly first when it has no timings of an earlier run).

if(NOT CMAKE_SCRIPT_MODE_FILE)
  set(_MNEMO_TEST_GROUPS_SCRIPT ${CMAKE_CURRENT_LIST_FILE})

  function(mnemo_add_test_groups target)
    cmake_parse_arguments(arg "" "TIMEOUT;SKIP_STATUS" "EXCLUDE;COVERED_BACKENDS;ENVIRONMENT" ${ARGN})
    if(NOT arg_TIMEOUT)
      set(arg_TIMEOUT 900)
    endif()
    if(NOT arg_SKIP_STATUS)
      set(arg_SKIP_STATUS 77)
    endif()
    set(params ${CMAKE_CURRENT_BINARY_DIR}/${target}_groups_params.cmake)
    set(ctest_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_groups_tests.cmake)
    set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_groups_include.cmake)
    # Lists travel through a file: semicolons and brackets survive it, not a command line.
    file(WRITE ${params}.in
      "set(TEST_EXECUTOR [==[${CMAKE_CROSSCOMPILING_EMULATOR}]==])\n"
      "set(TEST_ENVIRONMENT [==[${arg_ENVIRONMENT}]==])\n"
      "set(TEST_EXCLUDE [==[${arg_EXCLUDE}]==])\n"
      "set(COVERED_BACKENDS [==[${arg_COVERED_BACKENDS}]==])\n"
      "set(TEST_TIMEOUT ${arg_TIMEOUT})\n"
      "set(SKIP_STATUS ${arg_SKIP_STATUS})\n"
      "set(CTEST_FILE [==[${ctest_file}]==])\n")
    configure_file(${params}.in ${params} COPYONLY)  # touched only when it changes
    # A change of this script or of the parameters relinks the target, which lists its tests again.
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${_MNEMO_TEST_GROUPS_SCRIPT} ${params})
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${CMAKE_COMMAND} -D PARAMS=${params} -D TEST_EXECUTABLE=$<TARGET_FILE:${target}>
              -P ${_MNEMO_TEST_GROUPS_SCRIPT}
      BYPRODUCTS ${ctest_file}
      VERBATIM)
    file(WRITE ${include_file}
      "if(EXISTS [==[${ctest_file}]==])\n"
      "  include([==[${ctest_file}]==])\n"
      "else()\n"
      "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
      "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
  endfunction()
  return()
endif()

# ---------------------------------------------------------------- script mode (POST_BUILD)

cmake_minimum_required(VERSION 3.25)
include(${PARAMS})
execute_process(COMMAND ${TEST_EXECUTOR} ${TEST_EXECUTABLE} --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE result TIMEOUT 600)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "listing the tests of ${TEST_EXECUTABLE} failed (${result}):\n${listing}")
endif()

# Bracket arguments for the generated file.
function(_quote out value)
  set(eq "==")
  while(value MATCHES "\\]${eq}\\]")
    string(APPEND eq "=")
  endwhile()
  set(${out} "[${eq}[${value}]${eq}]" PARENT_SCOPE)
endfunction()

string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
set(groups "")
set(extra_backends "")
foreach(line IN LISTS lines)
  if(line STREQUAL "" OR line MATCHES "gtest_main\\.cc")
    continue()
  endif()
  if(NOT line MATCHES "^  ")
    string(REGEX REPLACE "\\.( *#.*)?$" "" suite "${line}")
    continue()
  endif()
  string(STRIP "${line}" test)
  string(REGEX REPLACE " +#.*" "" test "${test}")
  set(full "${suite}.${test}")
  if(suite MATCHES "^DISABLED_" OR test MATCHES "^DISABLED_")
    continue()
  endif()
  set(excluded FALSE)
  foreach(pattern IN LISTS TEST_EXCLUDE)
    string(REGEX REPLACE "\\*$" "" prefix "${pattern}")
    string(FIND "${full}" "${prefix}" at)
    if(at EQUAL 0)
      set(excluded TRUE)
    endif()
  endforeach()
  if(full MATCHES "^Conformance/BackendOps\\.Run/([a-z]+)")
    set(backend "${CMAKE_MATCH_1}")
    if(NOT backend IN_LIST COVERED_BACKENDS AND NOT backend IN_LIST extra_backends)
      list(APPEND extra_backends ${backend})
    endif()
    continue()
  endif()
  if(excluded)
    continue()
  endif()
  # The backend a test runs on, from its name: a parameter "vulkan", "cuda", "..._vulkan0",
  # "...__cuda_no_devices", or a suite about the backend ("VulkanBackend").
  string(TOLOWER "${full}" lower)
  set(tag "")
  if(lower MATCHES "vulkan")
    set(tag vulkan)
  elseif(lower MATCHES "(^|[/_.])cuda")
    set(tag cuda)
  endif()
  set(group "${suite}")
  string(TOLOWER "${suite}" lower_suite)
  if(tag AND NOT lower_suite MATCHES "${tag}")  # (VulkanBackend stays VulkanBackend)
    set(group "${suite}:${tag}")
  endif()
  string(MAKE_C_IDENTIFIER "${group}" key)
  if(NOT DEFINED members_${key})
    list(APPEND groups "${group}")
    set(tag_${key} "${tag}")
    set(members_${key} "")
    set(count_${key} 0)
  endif()
  # ':' separates gtest filter patterns; test names never contain it.
  string(APPEND members_${key} ":${full}")
  math(EXPR count_${key} "${count_${key}} + 1")
endforeach()

set(script "# Generated by cmake/MnemoTestGroups.cmake from ${TEST_EXECUTABLE} --gtest_list_tests\n")
set(env ${TEST_ENVIRONMENT} "MNEMO_TEST_SKIP_STATUS=${SKIP_STATUS}")
_quote(q_env "${env}")
_quote(q_exe "${TEST_EXECUTABLE}")
set(executor "")
foreach(part IN LISTS TEST_EXECUTOR)
  _quote(q "${part}")
  string(APPEND executor "${q} ")
endforeach()
foreach(group IN LISTS groups)
  string(MAKE_C_IDENTIFIER "${group}" key)
  string(SUBSTRING "${members_${key}}" 1 -1 filter)
  set(labels unit)
  if(tag_${key})
    list(APPEND labels ${tag_${key}})
  endif()
  _quote(q_name "${group}")
  _quote(q_filter "--gtest_filter=${filter}")
  _quote(q_labels "${labels}")
  string(APPEND script "add_test(${q_name} ${executor}${q_exe} ${q_filter})\n"
         "set_tests_properties(${q_name} PROPERTIES ENVIRONMENT ${q_env} LABELS ${q_labels} TIMEOUT ${TEST_TIMEOUT}"
         " COST ${count_${key}} SKIP_RETURN_CODE ${SKIP_STATUS})\n")
endforeach()
foreach(backend IN LISTS extra_backends)
  _quote(q_name "${backend}.conformance")
  _quote(q_filter "--gtest_filter=Conformance/BackendOps.Run/${backend}*")
  string(APPEND script "add_test(${q_name} ${executor}${q_exe} ${q_filter})\n"
         "set_tests_properties(${q_name} PROPERTIES ENVIRONMENT ${q_env} LABELS conformance TIMEOUT 1800"
         " COST 500 SKIP_RETURN_CODE ${SKIP_STATUS})\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
