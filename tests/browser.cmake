# The web UI: its JavaScript unit tests (node --test over web/test/), and the browser
# test: Debian's Chromium driven by playwright-core (tests/browser/) through the UI of
# a real profd scraping fixed profiles. Screenshots of each step go to
# ${CMAKE_BINARY_DIR}/browser-screenshots/. scripts/deps.sh installs chromium, node
# and tests/browser/node_modules.
add_test(NAME web_unit
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/browser/web_unit.sh ${PROJECT_SOURCE_DIR}/web)
set_tests_properties(web_unit PROPERTIES LABELS unit TIMEOUT 120)

add_test(NAME browser_ui
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/browser/run.sh $<TARGET_FILE:profd>
          $<TARGET_FILE:serve_profiles> ${PD_TESTDATA} ${PROJECT_SOURCE_DIR}/web ${CMAKE_BINARY_DIR})
set_tests_properties(browser_ui PROPERTIES LABELS integration TIMEOUT 600)

# A view with browser steps of its own (tests/browser/FILE, run by run.sh against a
# profd of its own like browser_ui's); screenshots in browser-screenshots-NAME/.
function(pd_browser_test name file)
  add_test(NAME ${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/browser/run.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PD_TESTDATA} ${PROJECT_SOURCE_DIR}/web
            ${CMAKE_BINARY_DIR} ${file})
  set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT 600)
endfunction()
# pd_browser_test(browser_NAME NAME.test.mjs) lines, one per view, go below.

# The UI under a route prefix through a reverse proxy (tests/browser/proxy.mjs):
# profd run --web.external-url=http://127.0.0.1:<proxy>/profd/.
add_test(NAME browser_prefix
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/browser/prefix.sh $<TARGET_FILE:profd>
          $<TARGET_FILE:serve_profiles> ${PD_TESTDATA} ${CMAKE_BINARY_DIR})
set_tests_properties(browser_prefix PROPERTIES LABELS integration TIMEOUT 300)
pd_browser_test(browser_sandwich sandwich.test.mjs)
pd_browser_test(browser_compare compare.test.mjs)
pd_browser_test(browser_exports exports.test.mjs)
pd_browser_test(browser_callgraph callgraph.test.mjs)
pd_browser_test(browser_ingest ingest.test.mjs)

# The UI over ClickHouse: run.sh with PD_BROWSER_CLICKHOUSE=1 also starts Debian's
# clickhouse-server on loopback ports (tests/support/clickhouse.sh) and runs profd with
# --storage.clickhouse.url; the steps (clickhouse.test.mjs) check scrape → ClickHouse
# → UI. Screenshots in browser-screenshots-clickhouse/.
find_program(PD_BROWSER_CLICKHOUSE_SERVER clickhouse-server PATHS /usr/sbin /usr/bin)
if(PD_BROWSER_CLICKHOUSE_SERVER)
  pd_browser_test(browser_clickhouse clickhouse.test.mjs)
  set_tests_properties(browser_clickhouse PROPERTIES
    ENVIRONMENT "PD_BROWSER_CLICKHOUSE=1;PATH=/usr/sbin:$ENV{PATH}")
endif()
