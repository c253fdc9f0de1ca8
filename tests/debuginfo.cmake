# debug file uploads (PUT /api/v1/debuginfo/<build-id>): a C program built with gcc
# uploaded to a running profd and found byte for byte at its .build-id path; every
# refusal (build id, not ELF, size, push disabled, auth) writes nothing; a kill -9
# after the 201 keeps the file
find_program(PD_GCC_FOR_DEBUGINFO gcc REQUIRED)
find_program(PD_OBJCOPY objcopy REQUIRED)
find_program(PD_READELF readelf REQUIRED)
add_test(NAME integration_debuginfo
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/debuginfo.sh $<TARGET_FILE:profd>)
set_tests_properties(integration_debuginfo PROPERTIES LABELS integration TIMEOUT 300)
