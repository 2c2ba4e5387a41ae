# Build options and compiler flags. Every option is printed by seg_print_summary().
include_guard(GLOBAL)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# --- CUDA: on when nvcc is found (tools/build.sh turns it off on machines without a GPU) ---
find_program(SEG_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
if(SEG_NVCC)
  set(_seg_cuda_default ON)
else()
  set(_seg_cuda_default OFF)
endif()
option(SEG_CUDA "Build the CUDA backend with nvcc" ${_seg_cuda_default})
option(SEG_SIM "Build the simulator variant of the CUDA kernels (g++ + kernels/sim) and its tests" ON)
# cuDNN: the `cudnn` convolution engine of CUDA builds (kernels/cuda/engine_cudnn.h), found below.
option(SEG_CUDNN "cuDNN convolution engine (--engine cudnn) of CUDA builds: cudnn.h at build time, libcudnn loaded at run time" ON)
# ptxas's per-kernel report (tools/ptxas_report.py): CI's CUDA stage turns it on.
option(SEG_PTXAS_REPORT "Keep ptxas's registers, shared memory and spills of every kernels/cuda kernel in <build>/ptxas (CUDA builds)" OFF)
# NCCL: the GPU communicator (core/comm_nccl.cpp) of the CUDA build, for `train --gpus 0-3`.
option(SEG_NCCL "NCCL between GPUs (core/comm_nccl.cpp; CUDA builds, libnccl)" ON)
# MPI: on by default when an MPI compiler wrapper is installed (tools/install-deps.sh installs OpenMPI).
find_program(SEG_MPICXX mpicxx)
if(SEG_MPICXX)
  set(_seg_mpi_default ON)
else()
  set(_seg_mpi_default OFF)
endif()
option(SEG_MPI "MPI communicator (core/comm_mpi.cpp): segtrain runs as N CPU ranks under mpirun" ${_seg_mpi_default})
option(SEG_BUILD_TESTS "Build the doctest suites" ON)
option(SEG_WERROR "Treat warnings as errors (CI turns this on)" OFF)
option(SEG_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only; tools/fuzz.sh)" OFF)
set(SEG_SANITIZE "" CACHE STRING "Sanitizers for the whole build: '', 'address' (ASan+UBSan) or 'thread' (TSan)")
set_property(CACHE SEG_SANITIZE PROPERTY STRINGS "" address thread)
set(SEG_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures for nvcc (sm_80 A100, sm_90 H100/H200)")

# The CUDA toolkit's headers are used even without SEG_CUDA: the simulator compiles our .cu files
# against them, and the half/bf16 tests compare our conversions with CUDA's host-side ones.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  set(SEG_HAVE_CUDA_HEADERS ON)
else()
  set(SEG_HAVE_CUDA_HEADERS OFF)
endif()

if(SEG_CUDA)
  if(NOT SEG_NVCC)
    message(FATAL_ERROR "SEG_CUDA=ON but nvcc was not found; install the CUDA toolkit or pass -DSEG_CUDA=OFF")
  endif()
  set(CMAKE_CUDA_COMPILER "${SEG_NVCC}")
  set(CMAKE_CUDA_ARCHITECTURES "${SEG_CUDA_ARCHITECTURES}")
  # CMake 3.25 does not know nvcc's C++20 flag, so pass it directly (nvcc 12+ accepts it).
  set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -std=c++20")
  # ... and with CMAKE_CXX_STANDARD_REQUIRED, CMake would also require a "CUDA20" dialect it has no
  # flag for, and refuse to generate any target with .cu sources.
  set(CMAKE_CUDA_STANDARD_REQUIRED OFF)
  enable_language(CUDA)
else()
  set(SEG_CUDNN OFF CACHE BOOL "" FORCE)
  set(SEG_NCCL OFF CACHE BOOL "" FORCE)
  set(SEG_PTXAS_REPORT OFF CACHE BOOL "" FORCE)
endif()
if(SEG_PTXAS_REPORT)
  find_program(SEG_PYTHON3 python3)
  if(NOT SEG_PYTHON3)
    message(FATAL_ERROR "SEG_PTXAS_REPORT=ON runs tools/ptxas_report.py as the CUDA compiler launcher: install python3 or pass -DSEG_PTXAS_REPORT=OFF")
  endif()
endif()

# cuDNN, for the `cudnn` engine (kernels/cuda/engine_cudnn.h): the header is needed to build it,
# the library only at run time (dlopen). Looked for in the toolkit, $CUDNN_HOME and the
# nvidia-cudnn-cu13 Python package; without the header the engine is left out of the build.
set(SEG_CUDNN_SUMMARY "OFF")
if(SEG_CUDNN)
  file(GLOB _seg_cudnn_py LIST_DIRECTORIES true /usr/local/lib/python3*/dist-packages/nvidia/cudnn
       /usr/lib/python3*/dist-packages/nvidia/cudnn /usr/local/lib/python3*/site-packages/nvidia/cudnn
       $ENV{HOME}/.local/lib/python3*/site-packages/nvidia/cudnn)
  find_path(SEG_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDNN_HOME} ${_seg_cudnn_py}
            PATH_SUFFIXES include)
  find_library(SEG_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{CUDNN_HOME}
               ${_seg_cudnn_py} PATH_SUFFIXES lib lib64)
  if(SEG_CUDNN_INCLUDE_DIR)
    set(SEG_CUDNN_SUMMARY "ON  (cudnn.h in ${SEG_CUDNN_INCLUDE_DIR}; library loaded at run time, found at build time: ${SEG_CUDNN_LIBRARY})")
  else()
    set(SEG_CUDNN_SUMMARY "OFF (cudnn.h not found: set CUDNN_HOME or install nvidia-cudnn-cu13)")
  endif()
endif()
if(SEG_SIM AND NOT SEG_HAVE_CUDA_HEADERS)
  message(WARNING "SEG_SIM needs the CUDA toolkit headers (cuda_fp16.h, mma.h); turning it off")
  set(SEG_SIM OFF CACHE BOOL "" FORCE)
endif()

# --- ccache when present ---
find_program(SEG_CCACHE ccache)
if(SEG_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER "${SEG_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${SEG_CCACHE}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${SEG_CCACHE}")
endif()

# --- CPU baseline: x86-64-v3 (AVX2, FMA, F16C); AVX-512 only inside functions marked
# SEG_TARGET_AVX512 and chosen at run time (core/cpu_features.h). Never -march=native.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(SEG_CPU_BASELINE "-march=x86-64-v3")
else()
  set(SEG_CPU_BASELINE "")
endif()

# Flags for every C++ target of the project (not for third-party code).
# -Wshadow=local and -Wno-restrict are GCC's (clang, used only by the fuzz build, has neither).
# -Wno-restrict: GCC 12 reports false positives deep inside std::string's operator+ (GCC bug
# 105651, fixed in GCC 13); every instance seen here was `"literal" + std::string`.
add_library(seg_flags INTERFACE)
target_compile_options(seg_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local> -Wno-unused-parameter
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict> ${SEG_CPU_BASELINE}>)
if(SEG_WERROR)
  target_compile_options(seg_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
target_include_directories(seg_flags INTERFACE ${PROJECT_SOURCE_DIR})
find_package(Threads REQUIRED)
target_link_libraries(seg_flags INTERFACE Threads::Threads)

# -Wno-maybe-uninitialized under ASan+UBSan: the instrumentation defeats GCC 12's flow analysis
# and it reports variables inside libstdc++'s <regex> (std::function moves in regex_automaton.h)
# as maybe uninitialized; the ordinary build keeps the warning.
if(SEG_SANITIZE STREQUAL "address")
  set(_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_compile_options(seg_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
elseif(SEG_SANITIZE STREQUAL "thread")
  set(_san -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT SEG_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SEG_SANITIZE must be '', 'address' or 'thread', not '${SEG_SANITIZE}'")
endif()
# SEG_FUZZ: every project file instrumented for libFuzzer's coverage and for ASan+UBSan; the fuzz
# executables add -fsanitize=fuzzer at link time (tests/fuzz/CMakeLists.txt).
if(SEG_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SEG_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ (tools/fuzz.sh does)")
  endif()
  if(NOT SEG_SANITIZE STREQUAL "")
    message(FATAL_ERROR "SEG_FUZZ=ON brings its own sanitizers; leave SEG_SANITIZE empty")
  endif()
  target_compile_options(seg_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
  target_link_options(seg_flags INTERFACE -fsanitize=address,undefined)
  target_compile_definitions(seg_flags INTERFACE SEG_SANITIZE_BUILD=1)
endif()
if(_san)
  target_compile_options(seg_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_san}>)
  target_link_options(seg_flags INTERFACE ${_san})
  target_compile_definitions(seg_flags INTERFACE SEG_SANITIZE_BUILD=1)
endif()

function(seg_print_summary)
  message(STATUS "")
  message(STATUS "segtrain ${PROJECT_VERSION} configuration")
  message(STATUS "  build type        : ${CMAKE_BUILD_TYPE}")
  message(STATUS "  C++ compiler      : ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  message(STATUS "  CPU baseline      : ${SEG_CPU_BASELINE} (+ AVX-512 by run-time dispatch)")
  message(STATUS "  CUDA (nvcc)       : ${SEG_CUDA}  archs ${SEG_CUDA_ARCHITECTURES}  nvcc=${SEG_NVCC}")
  message(STATUS "  CUDA simulator    : ${SEG_SIM}  (CUDA headers: ${SEG_HAVE_CUDA_HEADERS})")
  message(STATUS "  cuDNN             : ${SEG_CUDNN_SUMMARY}")
  if(SEG_PTXAS_REPORT)
    message(STATUS "  ptxas report      : ON (${CMAKE_BINARY_DIR}/ptxas; tools/ptxas_report.py report)")
  endif()
  if(SEG_CUDA AND SEG_NCCL)
    message(STATUS "  NCCL              : ON (CUDA build, libnccl: train --gpus 0-3)")
  else()
    message(STATUS "  NCCL              : OFF in the shipped build (CUDA builds only); the simulator's NCCL serves the sim tests")
  endif()
  if(SEG_MPI)
    message(STATUS "  MPI               : ON (MPI ${MPI_CXX_VERSION}, ${MPIEXEC_EXECUTABLE}: mpirun -np N segtrain train ...)")
  else()
    message(STATUS "  MPI               : OFF (install libopenmpi-dev for mpirun training)")
  endif()
  message(STATUS "  BLAS              : ${SEG_BLAS_SUMMARY}")
  message(STATUS "  ONNX export       : ${SEG_ONNX_SUMMARY}")
  message(STATUS "  sanitizers        : '${SEG_SANITIZE}'")
  message(STATUS "  ccache            : ${SEG_CCACHE}")
  message(STATUS "  tests             : ${SEG_BUILD_TESTS}  werror=${SEG_WERROR}")
  if(SEG_FUZZ)
    message(STATUS "  fuzz targets      : ON (tests/fuzz, libFuzzer + ASan + UBSan)")
  endif()
  message(STATUS "")
endfunction()
