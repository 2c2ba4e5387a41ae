// The requirement `cuda_headers` (tests/common/requirement.h): cases that compare our code with the
// CUDA toolkit's own host-side implementations (half/bf16 conversions, cuRAND's Philox) need its
// headers. A build without them has nothing to compare with: the CTest test test_core_cuda_headers
// then reports itself skipped.
#pragma once

#include <string>

#include "tests/common/requirement.h"

namespace seg::test {
inline std::string cuda_headers_missing() {
#ifdef SEG_TEST_HAVE_CUDA_HEADERS
  return "";
#else
  return "built without the CUDA toolkit's headers (cuda_fp16.h, cuda_bf16.h, curand_philox4x32_x.h): "
         "nothing to compare with";
#endif
}
}  // namespace seg::test

SEG_TEST_REQUIREMENT(cuda_headers, ::seg::test::cuda_headers_missing);
