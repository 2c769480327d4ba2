# folio_add_test(NAME <target> LABELS <label>... SOURCES <file>... LIBS <lib>...)
# Builds one GoogleTest binary and registers its tests with ctest under the given labels.
# Every *_test.cc in the tree must be named by some folio_add_test (checked at configure time).
function(folio_add_test)
  cmake_parse_arguments(T "" "NAME" "LABELS;SOURCES;LIBS" ${ARGN})
  foreach(src IN LISTS T_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE)
    set_property(GLOBAL APPEND PROPERTY FOLIO_REGISTERED_TESTS "${abs}")
  endforeach()
  if(NOT FOLIO_TESTS)
    return()
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  if("concurrency" IN_LIST T_LABELS)
    add_dependencies(concurrency_tests ${T_NAME})
  endif()
  gtest_discover_tests(${T_NAME}
    PROPERTIES LABELS "${T_LABELS}"
    DISCOVERY_TIMEOUT 60)
endfunction()

function(folio_check_all_tests_registered)
  file(GLOB_RECURSE all_tests LIST_DIRECTORIES false
       "${CMAKE_SOURCE_DIR}/src/*_test.cc" "${CMAKE_SOURCE_DIR}/tools/*_test.cc"
       "${CMAKE_SOURCE_DIR}/tests/*_test.cc")
  get_property(registered GLOBAL PROPERTY FOLIO_REGISTERED_TESTS)
  set(orphans "")
  foreach(t IN LISTS all_tests)
    list(FIND registered "${t}" idx)
    if(idx EQUAL -1)
      list(APPEND orphans "${t}")
    endif()
  endforeach()
  if(orphans)
    message(FATAL_ERROR "These *_test.cc files belong to no test target (add them to a "
                        "folio_add_test call): ${orphans}")
  endif()
endfunction()
