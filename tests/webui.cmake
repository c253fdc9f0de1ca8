# pkg/webui: the embedded UI files and the UI directory server
if(TARGET pd_webui)
  add_executable(test_webui ${CMAKE_CURRENT_LIST_DIR}/unit/test_webui.c)
  target_link_libraries(test_webui PRIVATE pd_webui PkgConfig::CMOCKA)
  target_compile_definitions(test_webui PRIVATE PD_WEB_DIR="${PROJECT_SOURCE_DIR}/web")
  add_test(NAME unit_webui COMMAND test_webui)
  set_tests_properties(unit_webui PROPERTIES LABELS unit TIMEOUT 60)
endif()
