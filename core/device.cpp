#include "core/device.h"

#include <cctype>

#include "core/error.h"

#ifdef SEG_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace seg {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  auto parse_index = [&](size_t pos) -> int {
    if (pos < text.size() && text[pos] == ':') ++pos;
    if (pos == text.size()) return 0;
    int value = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i])) || value > 100000)
        SEG_FAIL(usage, "bad device '", text, "'").hint("use cpu, cuda, cuda:N or gpuN");
      value = value * 10 + (text[i] - '0');
    }
    return value;
  };
  if (text.rfind("cuda", 0) == 0) return cuda(parse_index(4));
  if (text.rfind("gpu", 0) == 0) return cuda(parse_index(3));
  SEG_FAIL(usage, "bad device '", text, "'").hint("use cpu, cuda, cuda:N or gpuN");
}

bool cuda_compiled() {
#ifdef SEG_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef SEG_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

}  // namespace seg
