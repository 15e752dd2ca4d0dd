# Turns a file into a C byte array so the binary serves its own contract:
#   cmake -DIN=file -DOUT=file.c -DSYMBOL=ghd_openapi_yaml -P embed.cmake
# defines `const unsigned char SYMBOL[]` (NUL-terminated) and `SYMBOL_len`.
if(NOT SYMBOL)
  set(SYMBOL ghd_openapi_yaml)
endif()
file(READ "${IN}" content HEX)
string(LENGTH "${content}" hex_len)
math(EXPR byte_len "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}.tmp" "/* Generated from ${name}; do not edit. */\n#include <stddef.h>\n")
file(APPEND "${OUT}.tmp" "extern const unsigned char ${SYMBOL}[];\nextern const size_t ${SYMBOL}_len;\n")
file(APPEND "${OUT}.tmp" "const unsigned char ${SYMBOL}[] = {${bytes} 0x00};\n")
file(APPEND "${OUT}.tmp" "const size_t ${SYMBOL}_len = ${byte_len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
