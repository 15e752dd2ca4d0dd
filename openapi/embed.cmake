# Turns the OpenAPI YAML into a C string so the binary serves its own contract.
file(READ "${IN}" content HEX)
string(LENGTH "${content}" hex_len)
math(EXPR byte_len "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE "${OUT}" "/* Generated from openapi/openapi.yaml; do not edit. */\n#include <stddef.h>\n")
file(APPEND "${OUT}" "const unsigned char ghd_openapi_yaml[] = {${bytes} 0x00};\n")
file(APPEND "${OUT}" "const size_t ghd_openapi_yaml_len = ${byte_len};\n")
