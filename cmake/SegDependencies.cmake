# Third-party code comes only from Debian packages (tools/install-deps.sh); nothing is downloaded here.
include_guard(GLOBAL)

find_package(nlohmann_json 3.10 REQUIRED)

find_path(SEG_STB_INCLUDE stb/stb_image.h PATHS /usr/include)
if(NOT SEG_STB_INCLUDE)
  message(FATAL_ERROR "stb headers not found: run tools/install-deps.sh (Debian package libstb-dev)")
endif()

if(SEG_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()

find_package(yaml-cpp REQUIRED)  # upstream YAML configs, read unchanged

if(SEG_MPI)
  find_package(MPI REQUIRED COMPONENTS CXX)
endif()

set(SEG_BLAS_SUMMARY "own blocked GEMM (see docs/performance.md)")
