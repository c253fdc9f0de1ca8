# Pushes dated now, hours and days back while profd scrapes, persists and
# compacts, across 5 kill -9s: every acknowledged push is listed after every
# start, the rest were refused as out of bounds; pushes dated too far ahead are
# refused and change nothing; and a scrape refused as out of bounds is the
# target's lastError.
if(TARGET serve_profiles)
  add_test(NAME integration_backfill
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/backfill.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PD_TESTDATA})
  set_tests_properties(integration_backfill PROPERTIES LABELS integration TIMEOUT 300)
endif()
