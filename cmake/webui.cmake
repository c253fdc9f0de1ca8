# webui: the files of web/ embedded into profd (pkg/webui). webui_embed, a tool
# built first, writes them as a C table; adding or changing a file under web/
# rebuilds it (the glob is re-checked at every build).
file(GLOB_RECURSE PD_WEB_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/web/*)
list(FILTER PD_WEB_FILES EXCLUDE REGEX "/web/(test/|README\\.md$|dev-)")
list(SORT PD_WEB_FILES)
add_executable(webui_embed pkg/webui/gen/webui_embed.c)
target_link_libraries(webui_embed PRIVATE pd_flags)
set(PD_WEBUI_GEN ${CMAKE_BINARY_DIR}/gen/webui_assets.c)
add_custom_command(
  OUTPUT ${PD_WEBUI_GEN}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/gen
  COMMAND webui_embed ${PD_WEBUI_GEN} ${PROJECT_SOURCE_DIR}/web ${PD_WEB_FILES}
  DEPENDS webui_embed ${PD_WEB_FILES}
  COMMENT "embedding web/ (${CMAKE_CURRENT_LIST_FILE})")
add_library(pd_webui STATIC pkg/webui/webui.c ${PD_WEBUI_GEN})
target_include_directories(pd_webui PRIVATE ${PROJECT_SOURCE_DIR}/pkg/webui)
target_link_libraries(pd_webui PUBLIC pd_api pd_util)
target_link_libraries(profd PRIVATE pd_webui)
