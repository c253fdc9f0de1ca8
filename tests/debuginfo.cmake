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

# pkg/elf: build ids of the fuzz target's seed files, refusals, hex build ids
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
add_executable(test_elf ${CMAKE_CURRENT_LIST_DIR}/unit/test_elf.c)
target_link_libraries(test_elf PRIVATE pd_elf PkgConfig::CMOCKA)
target_compile_definitions(test_elf PRIVATE PD_ELF_CORPUS="${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus-elf")
add_test(NAME unit_elf COMMAND test_elf)
set_tests_properties(unit_elf PROPERTIES LABELS unit TIMEOUT 60)

# --web.max-debuginfo-total-size: uploads past it refused, nothing stored lost
add_test(NAME integration_debuginfo_quota
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/debuginfo_quota.sh $<TARGET_FILE:profd>)
set_tests_properties(integration_debuginfo_quota PROPERTIES LABELS integration TIMEOUT 300)
