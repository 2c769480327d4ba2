# Servers some tests need (Redis, PostgreSQL, Ceph), as CTest fixtures. The first
# folio_add_test(... SERVICES NAME) defines, for that NAME, the test `service_NAME_up`
# (FIXTURES_SETUP NAME: starts a throwaway server with scripts/services/NAME-up.sh before the
# first test that needs it) and `service_NAME_down` (FIXTURES_CLEANUP: stops it after the last).
# When the server cannot be started the fixture fails, and so do the tests needing it, in CI as
# root; elsewhere they skip, naming the reason (scripts/services/ctest-service.sh). State lives
# under /tmp (the PostgreSQL user must reach it), one directory per build tree, so a debug and
# a TSan run never share a server.
string(MD5 folio_build_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${folio_build_hash}" 0 10 folio_build_hash)
set(FOLIO_SERVICES_DIR "/tmp/folio-services-${folio_build_hash}")
set(FOLIO_SERVICES_SCRIPTS "${CMAKE_SOURCE_DIR}/scripts/services")

function(folio_use_service name)
  get_property(defined GLOBAL PROPERTY FOLIO_SERVICE_${name})
  if(defined)
    return()
  endif()
  set_property(GLOBAL PROPERTY FOLIO_SERVICE_${name} TRUE)
  if(NOT EXISTS "${FOLIO_SERVICES_SCRIPTS}/${name}-up.sh")
    message(FATAL_ERROR "SERVICES ${name}: no scripts/services/${name}-up.sh")
  endif()
  add_test(NAME service_${name}_up
           COMMAND ${FOLIO_SERVICES_SCRIPTS}/ctest-service.sh up ${name}
                   ${FOLIO_SERVICES_DIR}/${name})
  set_tests_properties(service_${name}_up PROPERTIES FIXTURES_SETUP ${name}
                       LABELS "server" TIMEOUT 300)
  add_test(NAME service_${name}_down
           COMMAND ${FOLIO_SERVICES_SCRIPTS}/ctest-service.sh down ${name}
                   ${FOLIO_SERVICES_DIR}/${name})
  set_tests_properties(service_${name}_down PROPERTIES FIXTURES_CLEANUP ${name}
                       LABELS "server" TIMEOUT 300)
endfunction()
