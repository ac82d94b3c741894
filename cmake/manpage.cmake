# Writes the man page asynccheck(1) from its template with the built command's --help as its OPTIONS section, so
# that the page cannot drift from the options. Run by cli/CMakeLists.txt as
#   cmake -DCOMMAND=... -DTEMPLATE=... -DOUTPUT=... -DVERSION=... -DLIB_FROM_BIN=... -DDOCDIR=... -P manpage.cmake
execute_process(COMMAND "${COMMAND}" --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${COMMAND} --help failed (${rc})")
endif()
string(STRIP "${help}" help)
# roff: a backslash is an escape, "-" is a hyphen unless written "\-" (options must copy as ASCII minus), and a
# line that starts with "." or "'" is a request unless it starts with "\&".
string(REPLACE "\\" "\\e" help "${help}")
string(REPLACE "-" "\\-" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
set(OPTIONS "${help}")
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
