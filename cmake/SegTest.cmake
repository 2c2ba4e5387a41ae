# seg_add_test(NAME <exe> LABEL <cpu|sim|gpu|mpi> SOURCES ... LIBS ... [LAUNCHER cmd args...])
#
# LAUNCHER runs the executable through another program (the MPI suites: mpirun -np 2).
# One doctest executable per folder and label. Each becomes a CTest test with that label and
# SKIP_RETURN_CODE 77 (GPU/MPI suites exit 77 when there is nothing to run on, and CTest reports
# them as skipped, never as passed). Besides the main test, the executable's cases are split into
# further CTest tests, found by reading the sources:
#   * cases decorated with doctest::test_suite("slow") form <exe>_slow, labelled `slow` too, so
#     `ctest -LE slow` is the fast subset;
#   * cases decorated with SEG_REQUIRES(name) (tests/common/requirement.h: AVX-512, the CUDA
#     headers, ...) form <exe>_<name>, which runs `--seg-require=name` and exits 77 (Skipped)
#     where the requirement is not met, so a path that did not run shows in ctest's output and in
#     the label summary.
# The main test excludes both kinds. Their --test-suite-exclude value (empty when there is none) is
# left in SEG_TEST_EXCLUDE_<exe> for tests that run the executable another way (the TSan shards of
# tests/kernels/cuda: without it a requirement's cases would run unchecked there).
include_guard(GLOBAL)

function(seg_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL" "SOURCES;LIBS;LAUNCHER" ${ARGN})
  set(T_SLOW_SUITE OFF)
  set(T_REQUIRES "")
  foreach(src ${T_SOURCES})
    file(READ ${src} _text)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
    string(FIND "${_text}" "test_suite(\"slow\")" _pos)
    if(_pos GREATER -1)
      set(T_SLOW_SUITE ON)
    endif()
    string(REGEX MATCHALL "SEG_REQUIRES\\(([a-z0-9_]+)\\)" _reqs "${_text}")
    foreach(_r ${_reqs})
      string(REGEX REPLACE "SEG_REQUIRES\\(([a-z0-9_]+)\\)" "\\1" _r "${_r}")
      list(APPEND T_REQUIRES ${_r})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES T_REQUIRES)
  add_executable(${T_NAME} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/tests/test_main.cpp)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} doctest::doctest seg_flags)
  target_compile_definitions(${T_NAME} PRIVATE SEG_TEST_LABEL="${T_LABEL}"
    SEG_SOURCE_DIR="${PROJECT_SOURCE_DIR}" SEG_BINARY_DIR="${CMAKE_BINARY_DIR}")
  set(_exclude "")
  if(T_SLOW_SUITE)
    set(_exclude "slow")
    add_test(NAME ${T_NAME}_slow COMMAND ${T_LAUNCHER} $<TARGET_FILE:${T_NAME}> --test-suite=slow)
    set_tests_properties(${T_NAME}_slow PROPERTIES LABELS "slow;${T_LABEL}" SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  endif()
  foreach(_r ${T_REQUIRES})
    list(APPEND _exclude "requires:${_r}")
    add_test(NAME ${T_NAME}_${_r} COMMAND ${T_LAUNCHER} $<TARGET_FILE:${T_NAME}> --test-suite=requires:${_r} --seg-require=${_r})
    set_tests_properties(${T_NAME}_${_r} PROPERTIES LABELS "${T_LABEL}" SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  endforeach()
  string(REPLACE ";" "," _exclude "${_exclude}")
  set(SEG_TEST_EXCLUDE_${T_NAME} "${_exclude}" PARENT_SCOPE)
  if(_exclude)
    add_test(NAME ${T_NAME} COMMAND ${T_LAUNCHER} $<TARGET_FILE:${T_NAME}> --test-suite-exclude=${_exclude})
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_LAUNCHER} $<TARGET_FILE:${T_NAME}>)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABEL}" SKIP_RETURN_CODE 77
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
