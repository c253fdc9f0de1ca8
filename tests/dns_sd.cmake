# dns_sd_configs against Debian's dnsmasq on a loopback port: every record type's
# labels, scrapes of the discovered targets, changed records, a server that stops
# answering
find_program(JQ_BIN_FOR_DNS jq REQUIRED)
find_program(DNSMASQ_BIN dnsmasq PATHS /usr/sbin /sbin REQUIRED)
add_test(NAME integration_dns_sd
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/dns_sd.sh $<TARGET_FILE:profd>
          $<TARGET_FILE:serve_profiles> ${PD_TESTDATA})
set_tests_properties(integration_dns_sd PROPERTIES LABELS integration TIMEOUT 300
  ENVIRONMENT "PATH=/usr/sbin:/sbin:$ENV{PATH}")
