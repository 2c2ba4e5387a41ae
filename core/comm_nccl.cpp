// The NCCL communicator (core/comm.h): ranks that are GPUs, gradients that never leave them.
//
// Two ways to make one, as NCCL offers:
//   make_nccl_communicators({0, 1})      one process, one host thread per GPU: ncclCommInitAll makes
//                                        every rank at once, the caller hands communicator i to the
//                                        thread that drives cuda:devices[i]
//   make_nccl_communicator(mpi, device)  one process per GPU under mpirun: rank 0's ncclUniqueId
//                                        travels over the MPI communicator, each process joins with
//                                        ncclCommInitRank (one machine or several: NCCL picks NVLink,
//                                        PCIe or the network)
//
// Stream semantics. A collective on device memory is queued on the device's current stream of the
// calling thread (core/stream.h), like a kernel: it returns at once, and work queued after it on
// that stream sees the result. "Blocking" in core/comm.h's sense therefore means stream-ordered; no
// host wait. The asynchronous sum runs on this communicator's own stream instead, fenced by events
// both ways (an event on the compute stream that the comm stream waits for before reading the
// buffer, and one on the comm stream that Pending::wait() makes the compute stream wait for), so a
// gradient bucket travels while backward keeps the compute stream busy.
//
// Host buffers (the run check's hashes, broadcast_string, the barrier) are staged through a small
// device buffer and waited for on the host: those calls happen once per run, not per step.
//
// Failures. NCCL reports a dead peer or a broken link asynchronously (ncclCommGetAsyncError); every
// host wait here polls it and gives up after timeout_seconds(), aborting the communicator and
// throwing Error(device) that names the rank, instead of hanging.
//
// The same file builds against real NCCL (SEG_CUDA with SEG_NCCL: libnccl) and against the
// simulator's NCCL (seg_core_sim: kernels/sim/nccl_*.cpp, simulated GPUs in one process).
#include "core/comm.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"

#if defined(SEG_WITH_NCCL)
#include <cuda_runtime.h>
#include <nccl.h>

#include "core/stream.h"
#endif

namespace seg {

#if defined(SEG_WITH_NCCL)

namespace {

ncclDataType_t nccl_type(DType dt) {
  switch (dt) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
  }
  SEG_ASSERT(false);
  return ncclFloat32;
}

void check_nccl(ncclResult_t r, ncclComm_t comm, const std::string& what) {
  if (r == ncclSuccess) return;
  std::string detail = ncclGetErrorString(r);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') detail += std::string(": ") + last;
  }
  throw Error(ErrorKind::device, str("NCCL failed ", what, ": ", detail))
      .hint("every rank must call the same collectives in the same order; NCCL_DEBUG=WARN prints NCCL's own "
            "account of the failure");
}

bool is_device_pointer(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown host pointer is not an error worth keeping
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

std::string nccl_version_text() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "NCCL";
  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9.
  return str("NCCL ", v / 10000, ".", (v / 100) % 100, ".", v % 100);
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device)
      : comm_(comm), rank_(rank), size_(size), device_(device) {
    set_current_cuda_device(device_);
    check_cuda(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking),
               str("creating the NCCL stream of cuda:", device_));
    check_cuda(cudaMalloc(&staging_, kStagingBytes), str("allocating the NCCL staging buffer on cuda:", device_));
  }
  ~NcclCommunicator() override {
    // Teardown must not throw; a communicator whose peers died is aborted rather than destroyed
    // (ncclCommDestroy would wait for them).
    if (!aborted_) {
      ncclResult_t async = ncclSuccess;
      (void)ncclCommGetAsyncError(comm_, &async);
      if (async == ncclSuccess) (void)ncclCommDestroy(comm_);
      else (void)ncclCommAbort(comm_);
    }
    if (staging_ != nullptr) (void)cudaFree(staging_);
    if (comm_stream_ != nullptr) (void)cudaStreamDestroy(comm_stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::cuda(device_); }
  std::string describe() const override {
#if defined(SEG_SIMULATED_GPU)
    const char* kind = " (simulated)";
#else
    const char* kind = "";
#endif
    return str(nccl_version_text(), kind, ": rank ", rank_, " of ", size_, ", cuda:", device_);
  }

  void allreduce_sum_typed(void* data, int64_t n, DType dtype) override {
    reduce(data, n, dtype, ncclSum, "summing");
  }
  void allreduce_max(int32_t* data, int64_t n) override { reduce(data, n, DType::i32, ncclMax, "taking the max of"); }

  std::unique_ptr<Pending> allreduce_sum_async_typed(void* data, int64_t n, DType dtype) override {
    SEG_CHECK(is_device_pointer(data), runtime, "an asynchronous NCCL sum needs device memory of cuda:", device_);
    (void)live();
    set_current_cuda_device(device_);
    const cuda::Stream compute = current_stream(device());
    auto pending = std::make_unique<AsyncSum>(compute);
    // The comm stream reads the buffer only after the compute stream has written it ...
    pending->ready.record(compute);
    pending->ready.wait(comm_stream_);
    check_nccl(ncclAllReduce(data, data, static_cast<size_t>(n), nccl_type(dtype), ncclSum, comm_, comm_stream_),
               comm_, str("summing ", n, " ", dtype_name(dtype), " values (asynchronously) on rank ", rank_));
    // ... and the compute stream reads the sum only after the comm stream is done (wait()).
    pending->done.record(comm_stream_);
    return pending;
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    SEG_CHECK(root >= 0 && root < size_, runtime, "broadcast from rank ", root, " of ", size_);
    if (bytes == 0) return;
    (void)live();
    set_current_cuda_device(device_);
    const cuda::Stream s = current_stream(device());
    if (is_device_pointer(data)) {
      check_nccl(ncclBroadcast(data, data, static_cast<size_t>(bytes), ncclUint8, root, comm_, s), comm_,
                 str("broadcasting ", bytes, " bytes from rank ", root));
      return;
    }
    for (int64_t off = 0; off < bytes; off += kStagingBytes) {
      const size_t chunk = static_cast<size_t>(std::min<int64_t>(kStagingBytes, bytes - off));
      char* host = static_cast<char*>(data) + off;
      check_cuda(cudaMemcpyAsync(staging_, host, chunk, cudaMemcpyHostToDevice, s), "staging a broadcast");
      check_nccl(ncclBroadcast(staging_, staging_, chunk, ncclUint8, root, comm_, s), comm_,
                 str("broadcasting ", chunk, " bytes from rank ", root));
      check_cuda(cudaMemcpyAsync(host, staging_, chunk, cudaMemcpyDeviceToHost, s), "reading a broadcast back");
      host_wait(s, "a broadcast");
    }
  }

  std::vector<uint64_t> allgather(uint64_t value) override {
    SEG_CHECK(static_cast<int64_t>(sizeof(uint64_t)) * (size_ + 1) <= kStagingBytes, runtime,
              "allgather of ", size_, " ranks exceeds the staging buffer");
    (void)live();
    set_current_cuda_device(device_);
    const cuda::Stream s = current_stream(device());
    auto* send = static_cast<char*>(staging_);
    char* recv = send + sizeof(uint64_t);
    std::vector<uint64_t> out(static_cast<size_t>(size_));
    check_cuda(cudaMemcpyAsync(send, &value, sizeof value, cudaMemcpyHostToDevice, s), "staging an allgather");
    check_nccl(ncclAllGather(send, recv, sizeof(uint64_t), ncclUint8, comm_, s), comm_, "gathering one value per rank");
    check_cuda(cudaMemcpyAsync(out.data(), recv, out.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, s),
               "reading an allgather back");
    host_wait(s, "an allgather");
    return out;
  }

  void barrier() override {
    int32_t one = 1;
    allreduce_max(&one, 1);
  }

  void set_timeout_seconds(double s) override { timeout_ = s; }
  double timeout_seconds() const override { return timeout_; }

  // May be called from another thread while this rank waits in a collective (how a failed rank
  // of --gpus releases the others): NCCL's abort is meant for that.
  void abort(int exit_code) override {
    (void)exit_code;  // the threads' caller decides the process's exit; the peers see the abort
    if (!aborted_.exchange(true)) (void)ncclCommAbort(comm_);
  }

 private:
  static constexpr int64_t kStagingBytes = 1 << 16;

  struct AsyncSum final : Pending {
    explicit AsyncSum(cuda::Stream compute) : compute(compute) {}
    void wait() override {
      if (waited) return;
      done.wait(compute);  // on the device: no host wait
      waited = true;
    }
    bool test() override { return done.query(); }
    cuda::Stream compute;
    Event ready, done;
    bool waited = false;
  };

  // The communicator, unless abort() or a timeout ended it.
  ncclComm_t live() const {
    if (aborted_)
      throw Error(ErrorKind::device, str("NCCL rank ", rank_, " of ", size_, " was aborted; no more collectives"));
    return comm_;
  }

  void reduce(void* data, int64_t n, DType dtype, ncclRedOp_t op, const char* verb) {
    if (n == 0) return;
    (void)live();
    set_current_cuda_device(device_);
    const cuda::Stream s = current_stream(device());
    const std::string what = str(verb, " ", n, " ", dtype_name(dtype), " values on rank ", rank_, " of ", size_);
    if (is_device_pointer(data)) {
      check_nccl(ncclAllReduce(data, data, static_cast<size_t>(n), nccl_type(dtype), op, comm_, s), comm_, what);
      return;
    }
    const int64_t bytes = n * static_cast<int64_t>(dtype_size(dtype));
    SEG_CHECK(bytes <= kStagingBytes, runtime, "a host-memory NCCL all-reduce of ", bytes,
              " bytes: host buffers are for small values (use device memory)");
    check_cuda(cudaMemcpyAsync(staging_, data, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s),
               "staging an all-reduce");
    check_nccl(ncclAllReduce(staging_, staging_, static_cast<size_t>(n), nccl_type(dtype), op, comm_, s), comm_, what);
    check_cuda(cudaMemcpyAsync(data, staging_, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, s),
               "reading an all-reduce back");
    host_wait(s, what);
  }

  // Waits for `s`, polling NCCL's asynchronous error and the timeout (a peer that died never
  // completes the collective; NCCL would spin forever).
  void host_wait(cuda::Stream s, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t q = cudaStreamQuery(s);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) check_cuda(q, "waiting for " + what);
      (void)live();  // another thread aborted this rank (a peer failed)
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm_, &async), comm_, "asking for NCCL's asynchronous error");
      check_nccl(async, comm_, str("while ", what));
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (timeout_ > 0 && waited > timeout_) {
        abort(1);
        throw Error(ErrorKind::device, str("rank ", rank_, " of ", size_, " waited ", static_cast<int>(waited),
                                           " s for its peers while ", what, "; aborted the NCCL communicator"))
            .hint("a rank died or stopped calling collectives; --comm-timeout sets how long to wait");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
  int rank_ = 0, size_ = 1, device_ = 0;
  double timeout_ = 300.0;
  cudaStream_t comm_stream_ = nullptr;
  void* staging_ = nullptr;
};

}  // namespace

bool built_with_nccl() { return true; }

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices) {
  SEG_CHECK(!devices.empty(), usage, "NCCL needs at least one GPU");
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  check_nccl(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()), nullptr,
             str("creating communicators for ", devices.size(), " GPUs (ncclCommInitAll)"));
  std::vector<std::unique_ptr<Communicator>> out;
  for (size_t i = 0; i < devices.size(); ++i)
    out.push_back(std::make_unique<NcclCommunicator>(comms[i], static_cast<int>(i), static_cast<int>(devices.size()),
                                                     devices[i]));
  return out;
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& processes, int device) {
  ncclUniqueId id{};
  if (processes.rank() == 0) check_nccl(ncclGetUniqueId(&id), nullptr, "creating NCCL's unique id");
  processes.broadcast(&id, sizeof id, 0);
  set_current_cuda_device(device);
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, processes.size(), id, processes.rank()), nullptr,
             str("joining the NCCL communicator as rank ", processes.rank(), " of ", processes.size(), " on cuda:", device));
  return std::make_unique<NcclCommunicator>(comm, processes.rank(), processes.size(), device);
}

#else  // built without NCCL

bool built_with_nccl() { return false; }

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices) {
  throw Error(ErrorKind::usage, str("training on ", devices.size(), " GPUs needs NCCL, and this segtrain was built without it"))
      .hint("install the CUDA toolkit with NCCL and rebuild with -DSEG_CUDA=ON -DSEG_NCCL=ON");
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& processes, int device) {
  (void)processes;
  throw Error(ErrorKind::usage, str("rank on cuda:", device, " needs NCCL, and this segtrain was built without it"))
      .hint("install the CUDA toolkit with NCCL and rebuild with -DSEG_CUDA=ON -DSEG_NCCL=ON");
}

#endif

}  // namespace seg
