# Writes OUT, a C++ source defining stalesim::git_revision(), from the checkout at SRC.
# Run at every build; the file is rewritten only when the revision changes, so nothing rebuilds
# needlessly. A checkout with uncommitted changes is marked "-dirty".
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
    OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    set(rev "${rev}-dirty")
  endif()
endif()
set(text "// Generated at build time by tools/cmake/git_rev.cmake. Do not edit.\nnamespace stalesim {\nconst char* git_revision() { return \"${rev}\"; }\n}  // namespace stalesim\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
