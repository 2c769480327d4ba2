# folio_add_test(NAME <target> LABELS <label>... SOURCES <file>... LIBS <lib>...
#                [SERVICES <server>...])
# Builds one GoogleTest binary and registers its tests with ctest under the given labels.
# SERVICES: the servers its tests need (cmake/folio_services.cmake): ctest starts them first,
# and the tests find them through FOLIO_SERVICES_DIR (src/meta/test_services.h).
# Every *_test.cc in the tree must be named by some folio_add_test (checked at configure time).
function(folio_add_test)
  cmake_parse_arguments(T "" "NAME" "LABELS;SOURCES;LIBS;SERVICES" ${ARGN})
  foreach(src IN LISTS T_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE)
    set_property(GLOBAL APPEND PROPERTY FOLIO_REGISTERED_TESTS "${abs}")
  endforeach()
  if(NOT FOLIO_TESTS)
    return()
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} folio_test_support GTest::gtest
                        GTest::gtest_main)
  if("concurrency" IN_LIST T_LABELS)
    add_dependencies(concurrency_tests ${T_NAME})
  endif()
  if(NOT "slow" IN_LIST T_LABELS)
    add_dependencies(default_tests ${T_NAME})
  endif()
  # The tests' properties are set by a file ctest includes after the discovered tests
  # (gtest_discover_tests' PROPERTIES lose every element of a list value but the first: LABELS
  # "unit;concurrency" would be just "unit").
  set(props "LABELS [==[${T_LABELS}]==]")
  if(T_SERVICES)
    foreach(service IN LISTS T_SERVICES)
      folio_use_service(${service})
    endforeach()
    target_compile_definitions(${T_NAME} PRIVATE
      FOLIO_SERVICES_SCRIPTS="${FOLIO_SERVICES_SCRIPTS}")
    string(APPEND props " FIXTURES_REQUIRED [==[${T_SERVICES}]==]"
                        " ENVIRONMENT [==[FOLIO_SERVICES_DIR=${FOLIO_SERVICES_DIR}]==]")
  endif()
  # A slow binary may rebuild the sources of a default one (raid_slow_test: the fault model at
  # 1M operations): its tests get a "slow:" prefix, since two tests of one name would share one
  # set of properties and the default run would lose its copy to the slow label.
  set(prefix "")
  if("slow" IN_LIST T_LABELS)
    set(prefix TEST_PREFIX "slow:")
  endif()
  gtest_discover_tests(${T_NAME} ${prefix} DISCOVERY_TIMEOUT 60)
  set(props_file "${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_properties.cmake")
  # A binary not built (make test-arm64 builds only default_tests) stands in ctest as the one
  # test <target>_NOT_BUILT, which fails: it gets the binary's labels, so `ctest -LE slow` leaves
  # an unbuilt slow binary out, and a missing default one still fails.
  file(WRITE "${props_file}"
       "if(DEFINED ${T_NAME}_TESTS)\n"
       "  set_tests_properties(\${${T_NAME}_TESTS} PROPERTIES ${props})\n"
       "else()\n"
       "  set_tests_properties(${T_NAME}_NOT_BUILT PROPERTIES LABELS [==[${T_LABELS}]==])\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${props_file}")
endfunction()

# *_test.cc files of a feature this configuration leaves out (e.g. FOLIO_POSTGRES=OFF): named,
# so the check below knows they belong to a target, and not built.
function(folio_unbuilt_tests)
  foreach(src IN LISTS ARGN)
    get_filename_component(abs "${src}" ABSOLUTE)
    set_property(GLOBAL APPEND PROPERTY FOLIO_REGISTERED_TESTS "${abs}")
  endforeach()
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
