// seg::cuda::LaunchError: what SEG_LAUNCH (kernels/cuda/launch.h) throws when a kernel launch fails.
//
// Plain C++ with no CUDA header, so host code that catches it compiles anywhere. Under nvcc it
// carries cudaGetLastError()'s message after `<<<>>>`; under the simulator (kernels/sim) the fault
// the simulator found is thrown as seg::sim::KernelFault, which derives from this class.
#pragma once

#include <stdexcept>
#include <string>

namespace seg::cuda {

class LaunchError : public std::runtime_error {
 public:
  explicit LaunchError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace seg::cuda
