// Why `--device cuda:0` cannot run, from what the CUDA runtime answered (core/device.h
// diagnose_cuda): every case without a GPU, by feeding the answers a machine would give. The error
// codes are cudaError_t's (core/device.h checks its copies against cuda_runtime.h in CUDA builds).
#include <doctest/doctest.h>

#include "core/device.h"
#include "core/error.h"

using namespace seg;

namespace {
CudaAnswers answered(int count_error, int devices, int driver_version, int runtime_version = 13000) {
  CudaAnswers a;
  a.count_error = count_error;
  a.devices = devices;
  a.driver_version = driver_version;
  a.runtime_version = runtime_version;
  return a;
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("diagnose_cuda: a driver older than the toolkit names both CUDA versions and says to update the driver") {
  // A CUDA 12.4 driver (cudaDriverGetVersion 12040) under a CUDA 13.0 runtime: cudaErrorInsufficientDriver.
  const CudaDiagnosis d = diagnose_cuda(answered(kCudaErrorInsufficientDriver, 0, 12040, 13000));
  CHECK(d.availability == CudaAvailability::driver_too_old);
  CHECK(d.message == "the NVIDIA driver supports CUDA 12.4, older than the CUDA 13.0 this segtrain was built with");
  CHECK(has(d.hint, "update the NVIDIA driver"));
  CHECK(has(d.hint, "nvidia-smi"));
  // Minor versions too (a 13.1 toolkit, a 13.0 driver that the runtime refuses).
  CHECK(diagnose_cuda(answered(kCudaErrorInsufficientDriver, 0, 13000, 13010)).message ==
        "the NVIDIA driver supports CUDA 13.0, older than the CUDA 13.1 this segtrain was built with");
}

TEST_CASE("diagnose_cuda: no NVIDIA driver at all is 'no GPU', not 'CUDA 0.0'") {
  // Without libcuda the runtime also answers cudaErrorInsufficientDriver, with driver version 0.
  const CudaDiagnosis d = diagnose_cuda(answered(kCudaErrorInsufficientDriver, 0, 0));
  CHECK(d.availability == CudaAvailability::no_driver);
  CHECK(d.message == "no CUDA GPU found (no NVIDIA driver is installed)");
  CHECK(!has(d.message, "0.0"));
  CHECK(has(d.hint, "install the NVIDIA driver"));
  CHECK(has(d.hint, "--device cpu"));
}

TEST_CASE("diagnose_cuda: a driver but no GPU (cudaErrorNoDevice, or a count of 0)") {
  const CudaDiagnosis a = diagnose_cuda(answered(kCudaErrorNoDevice, 0, 13000));
  CHECK(a.availability == CudaAvailability::no_device);
  CHECK(a.message == "no CUDA GPU found (cudaErrorNoDevice)");
  CHECK(has(a.hint, "CUDA_VISIBLE_DEVICES"));
  const CudaDiagnosis b = diagnose_cuda(answered(0, 0, 13000));
  CHECK(b.availability == CudaAvailability::no_device);
  CHECK(b.message == "no CUDA GPU found");
  CHECK(has(b.hint, "CUDA_VISIBLE_DEVICES"));
}

TEST_CASE("diagnose_cuda: a kernel module and libcuda of different versions; other runtime errors by their name") {
  const CudaDiagnosis m = diagnose_cuda(answered(kCudaErrorSystemDriverMismatch, 0, 13000));
  CHECK(m.availability == CudaAvailability::driver_mismatch);
  CHECK(has(m.message, "cudaErrorSystemDriverMismatch"));
  CHECK(has(m.hint, "reboot"));
  CudaAnswers other = answered(999, 0, 13000);
  other.error_name = "cudaErrorUnknown";
  other.error_text = "unknown error";
  const CudaDiagnosis u = diagnose_cuda(other);
  CHECK(u.availability == CudaAvailability::runtime_error);
  CHECK(u.message == "the CUDA runtime reports cudaErrorUnknown: unknown error");
  // Without the runtime's names, the number.
  CHECK(diagnose_cuda(answered(999, 0, 13000)).message == "the CUDA runtime reports error 999");
}

TEST_CASE("diagnose_cuda: usable devices, and a build without CUDA") {
  const CudaDiagnosis ok = diagnose_cuda(answered(0, 2, 13000));
  CHECK(ok.availability == CudaAvailability::usable);
  CHECK(ok.message.empty());
  CHECK(ok.hint.empty());
  // An older driver that the runtime accepts (minor-version compatibility) is usable: no message.
  CHECK(diagnose_cuda(answered(0, 1, 12080, 12090)).availability == CudaAvailability::usable);
  CudaAnswers none;
  none.compiled = false;
  const CudaDiagnosis nc = diagnose_cuda(none);
  CHECK(nc.availability == CudaAvailability::not_compiled);
  CHECK(nc.message == "this segtrain was built without CUDA");
  CHECK(has(nc.hint, "SEG_CUDA=ON"));
}

TEST_CASE("require_device: the CPU always; cuda:0 is a device error (exit 4) with probe_cuda's words and hint") {
  CHECK_NOTHROW(require_device(Device::cpu()));
  const CudaProbe p = probe_cuda();
  CAPTURE(p.error);
  if (p.availability == CudaAvailability::usable) {  // a CUDA build on a machine with a GPU
    CHECK_NOTHROW(require_device(Device::cuda(0)));
    return;
  }
  // test_core is the CPU build here (and a CUDA build on a machine without a usable GPU).
  if (!cuda_compiled()) CHECK(p.availability == CudaAvailability::not_compiled);
  try {
    require_device(Device::cuda(0));
    FAIL("require_device(cuda:0) returned without a usable GPU");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::device);
    CHECK(e.exit_code() == 4);
    CHECK(e.message() == "GPU cuda:0 requested, but " + p.error);
    CHECK(e.context("what to do") == p.hint);
    if (!cuda_compiled()) CHECK(e.message() == "GPU cuda:0 requested, but this segtrain was built without CUDA");
  }
}
