# The contract and the docs page, included from the top-level CMakeLists.txt.
#  - openapi.yaml is embedded into the binary (ghd_openapi_yaml), and so is
#    its JSON form (ghd_openapi_json), converted here at build time with
#    python3 and PyYAML;
#  - the Swagger UI assets /docs serves are copied into <build>/swagger-ui
#    (beside the gpuhttpd binary, where it looks for them) and installed into
#    <prefix>/share/gpuhttpd/swagger-ui.
# Sets GHD_OPENAPI_SOURCES to the generated sources.

find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(FATAL_ERROR
    "gpuhttpd needs python3 with PyYAML at build time to turn openapi/openapi.yaml into "
    "JSON. Debian/Ubuntu: apt-get install python3 python3-yaml")
endif()
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import yaml"
                RESULT_VARIABLE GHD_HAVE_PYYAML OUTPUT_QUIET ERROR_QUIET)
if(NOT GHD_HAVE_PYYAML EQUAL 0)
  message(FATAL_ERROR
    "gpuhttpd needs PyYAML for ${Python3_EXECUTABLE} at build time (openapi.yaml -> JSON). "
    "Debian/Ubuntu: apt-get install python3-yaml; otherwise: ${Python3_EXECUTABLE} -m pip "
    "install pyyaml; or pick another interpreter with -DPython3_EXECUTABLE=/usr/bin/python3")
endif()

set(GHD_OPENAPI_DIR ${CMAKE_CURRENT_SOURCE_DIR}/openapi)
set(GHD_OPENAPI_JSON ${CMAKE_CURRENT_BINARY_DIR}/openapi.json)
set(GHD_OPENAPI_C ${CMAKE_CURRENT_BINARY_DIR}/openapi_embed.c)
set(GHD_OPENAPI_JSON_C ${CMAKE_CURRENT_BINARY_DIR}/openapi_json_embed.c)

add_custom_command(
  OUTPUT ${GHD_OPENAPI_JSON}
  COMMAND ${Python3_EXECUTABLE} ${GHD_OPENAPI_DIR}/to_json.py ${GHD_OPENAPI_DIR}/openapi.yaml
          ${GHD_OPENAPI_JSON}
  DEPENDS ${GHD_OPENAPI_DIR}/openapi.yaml ${GHD_OPENAPI_DIR}/to_json.py
  COMMENT "Converting openapi/openapi.yaml to JSON")
add_custom_command(
  OUTPUT ${GHD_OPENAPI_C}
  COMMAND ${CMAKE_COMMAND} -DIN=${GHD_OPENAPI_DIR}/openapi.yaml -DOUT=${GHD_OPENAPI_C}
          -DSYMBOL=ghd_openapi_yaml -P ${GHD_OPENAPI_DIR}/embed.cmake
  DEPENDS ${GHD_OPENAPI_DIR}/openapi.yaml ${GHD_OPENAPI_DIR}/embed.cmake
  COMMENT "Embedding openapi/openapi.yaml")
add_custom_command(
  OUTPUT ${GHD_OPENAPI_JSON_C}
  COMMAND ${CMAKE_COMMAND} -DIN=${GHD_OPENAPI_JSON} -DOUT=${GHD_OPENAPI_JSON_C}
          -DSYMBOL=ghd_openapi_json -P ${GHD_OPENAPI_DIR}/embed.cmake
  DEPENDS ${GHD_OPENAPI_JSON} ${GHD_OPENAPI_DIR}/embed.cmake
  COMMENT "Embedding openapi.json")
set(GHD_OPENAPI_SOURCES ${GHD_OPENAPI_C} ${GHD_OPENAPI_JSON_C})
set_source_files_properties(${GHD_OPENAPI_C} ${GHD_OPENAPI_JSON_C}
                            PROPERTIES COMPILE_OPTIONS "-Wno-overlength-strings")

# Swagger UI 5 assets from an installed Python package (see swagger_ui_assets.py).
# Runs on every build so that installing the package later needs no re-configure;
# without the package it only warns, and /docs explains what to install.
set(GHD_DOCS_BUILD_DIR ${CMAKE_CURRENT_BINARY_DIR}/swagger-ui)
add_custom_target(ghd_swagger_ui ALL
  COMMAND ${Python3_EXECUTABLE} ${GHD_OPENAPI_DIR}/swagger_ui_assets.py ${GHD_DOCS_BUILD_DIR}
  COMMENT "Copying the Swagger UI assets for /docs"
  VERBATIM)
install(DIRECTORY ${GHD_DOCS_BUILD_DIR}/ DESTINATION share/gpuhttpd/swagger-ui OPTIONAL)
