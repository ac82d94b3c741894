# A stress program built once plain and once under each sanitizer the compiler has (of those asked for), each a
# test: AddressSanitizer reports memory misused, ThreadSanitizer a data race (the run then exits 66). A sanitizer
# that cannot run on this kernel (ThreadSanitizer's "unexpected memory mapping") skips, saying so.
#   asynccheck_stress_variants(NAME name TEST test.prefix SANITIZERS address thread SOURCES a.cpp b.cpp
#                              [DEFINITIONS X="y"])
# makes executables name_plain, name_address, ... and tests test.prefix.plain, test.prefix.address, ...
include(CheckCXXSourceCompiles)
function(asynccheck_stress_variants)
  cmake_parse_arguments(arg "" "NAME;TEST" "SANITIZERS;SOURCES;DEFINITIONS" ${ARGN})
  set(variants plain)
  foreach(sanitizer ${arg_SANITIZERS})
    set(CMAKE_REQUIRED_FLAGS -fsanitize=${sanitizer})
    set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=${sanitizer})
    check_cxx_source_compiles("int main() { return 0; }" ASYNCCHECK_HAVE_SANITIZER_${sanitizer})
    if(ASYNCCHECK_HAVE_SANITIZER_${sanitizer})
      list(APPEND variants ${sanitizer})
    endif()
  endforeach()
  foreach(variant ${variants})
    add_executable(${arg_NAME}_${variant} ${arg_SOURCES})
    target_include_directories(${arg_NAME}_${variant} PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_definitions(${arg_NAME}_${variant} PRIVATE ${arg_DEFINITIONS})
    target_link_libraries(${arg_NAME}_${variant} PRIVATE Threads::Threads asynccheck_warnings)
    if(NOT variant STREQUAL plain)
      target_compile_options(${arg_NAME}_${variant} PRIVATE -fsanitize=${variant} -fno-omit-frame-pointer -g)
      target_link_options(${arg_NAME}_${variant} PRIVATE -fsanitize=${variant})
    endif()
    add_test(NAME ${arg_TEST}.${variant} COMMAND ${arg_NAME}_${variant})
    set_tests_properties(${arg_TEST}.${variant} PROPERTIES
      ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1:exitcode=66;ASAN_OPTIONS=detect_leaks=1"
      SKIP_REGULAR_EXPRESSION "ThreadSanitizer: unexpected memory mapping")
  endforeach()
endfunction()
