# seg_add_test(NAME <exe> LABEL <cpu|sim|gpu|mpi> SOURCES ... LIBS ...)
#
# One doctest executable per folder and label. Each becomes a CTest test with that label and
# SKIP_RETURN_CODE 77 (GPU/MPI suites exit 77 when there is nothing to run on, and CTest reports
# them as skipped, never as passed). Test cases decorated with doctest::test_suite("slow") are split
# into a second CTest test <exe>_slow labelled `slow` (only when a source contains such a case), so
# `ctest -LE slow` is the fast subset.
include_guard(GLOBAL)

function(seg_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL" "SOURCES;LIBS" ${ARGN})
  set(T_SLOW_SUITE OFF)
  foreach(src ${T_SOURCES})
    file(READ ${src} _text)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
    string(FIND "${_text}" "test_suite(\"slow\")" _pos)
    if(_pos GREATER -1)
      set(T_SLOW_SUITE ON)
    endif()
  endforeach()
  add_executable(${T_NAME} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/tests/test_main.cpp)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} doctest::doctest seg_flags)
  target_compile_definitions(${T_NAME} PRIVATE SEG_TEST_LABEL="${T_LABEL}"
    SEG_SOURCE_DIR="${PROJECT_SOURCE_DIR}" SEG_BINARY_DIR="${CMAKE_BINARY_DIR}")
  if(T_SLOW_SUITE)
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --test-suite-exclude=slow)
    add_test(NAME ${T_NAME}_slow COMMAND ${T_NAME} --test-suite=slow)
    set_tests_properties(${T_NAME}_slow PROPERTIES LABELS "slow;${T_LABEL}" SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABEL}" SKIP_RETURN_CODE 77
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
