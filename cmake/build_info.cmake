# Writes the header version.cpp includes (cmake -P, at every build): the git commit of the source
# tree, "unknown" outside a git checkout (a release tarball), "-modified" after it when tracked files
# differ from it; and what CMake found at configure time (passed in with -D). configure_file leaves
# the header untouched when nothing changed, so an unchanged tree recompiles nothing.
# In: ZBPP_SOURCE_DIR, ZBPP_TEMPLATE, ZBPP_OUTPUT and the ZBPP_BUILT_* values.
set(ZBPP_GIT_COMMIT unknown)
find_program(ZBPP_GIT git)
if(ZBPP_GIT AND EXISTS "${ZBPP_SOURCE_DIR}/.git")
  execute_process(COMMAND "${ZBPP_GIT}" -C "${ZBPP_SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit RESULT_VARIABLE failed OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT failed AND commit)
    set(ZBPP_GIT_COMMIT "${commit}")
    execute_process(COMMAND "${ZBPP_GIT}" -C "${ZBPP_SOURCE_DIR}" diff --quiet HEAD --
                    RESULT_VARIABLE modified OUTPUT_QUIET ERROR_QUIET)
    if(modified EQUAL 1)
      string(APPEND ZBPP_GIT_COMMIT "-modified")
    endif()
  endif()
endif()
configure_file("${ZBPP_TEMPLATE}" "${ZBPP_OUTPUT}" @ONLY)
