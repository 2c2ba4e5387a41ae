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

# JPEG decoding: libjpeg-turbo (Debian's libjpeg62-turbo-dev), the library Pillow uses. The static
# archive is preferred, so that the binary needs no libjpeg at run time (the GPU machine gets only
# the build folder).
find_path(SEG_JPEG_INCLUDE jpeglib.h)
find_library(SEG_JPEG_LIBRARY NAMES libjpeg.a jpeg)
if(NOT SEG_JPEG_INCLUDE OR NOT SEG_JPEG_LIBRARY)
  message(FATAL_ERROR "libjpeg-turbo not found: run tools/install-deps.sh (Debian package libjpeg62-turbo-dev)")
endif()

find_package(yaml-cpp REQUIRED)  # upstream YAML configs, read unchanged

if(SEG_MPI)
  find_package(MPI REQUIRED COMPONENTS CXX)
endif()

# ONNX (Debian's libonnx-dev: the protobuf classes and the checker) for `segtrain export`. Without it
# the command exists and says how to get it.
find_package(ONNX CONFIG QUIET)
if(ONNX_FOUND OR TARGET onnx)
  find_package(Protobuf REQUIRED)
  set(SEG_HAVE_ONNX ON)
  set(SEG_ONNX_SUMMARY "ON (libonnx ${ONNX_VERSION}: segtrain export)")
else()
  set(SEG_HAVE_ONNX OFF)
  set(SEG_ONNX_SUMMARY "OFF (install libonnx-dev for segtrain export)")
endif()

set(SEG_BLAS_SUMMARY "own blocked GEMM (see docs/performance.md)")
