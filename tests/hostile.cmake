# Hostile targets: the daemon beside targets that attack the scraper (bombs,
# endless and trickling bodies, garbage, a huge profile, a redirect loop) keeps
# scraping a well-behaved target on time, names each failure, stays within its
# documented memory bound and stops promptly.
if(TARGET pd_util)
  pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
  add_executable(hostile_targets ${CMAKE_CURRENT_LIST_DIR}/support/hostile_targets.c)
  target_link_libraries(hostile_targets PRIVATE pd_util PkgConfig::MHD PkgConfig::ZLIB pthread)
  add_test(NAME integration_hostile
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/hostile.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:hostile_targets> ${PD_TESTDATA})
  set_tests_properties(integration_hostile PROPERTIES LABELS integration TIMEOUT 600)
endif()
