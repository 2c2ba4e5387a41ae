// One rank of an NCCL communicator spanning processes, on the simulator (kernels/sim/nccl_spanning.cpp):
// test_sim's "NCCL across processes" cases start several of these, as mpirun starts one process per
// GPU. Rank 0 makes the unique id and writes it to ID_FILE; the others read it from there (the
// role MPI_Bcast plays in core/comm_nccl.cpp). Prints what happened; exits 0 when the rank saw
// what MODE expects, 1 otherwise.
//
//   sim_nccl_peer MODE RANK NRANKS ID_FILE
//
//   collectives  every collective, twice, each result compared bit for bit with the same
//                rank-order arithmetic done here on the host
//   mismatch     rank 1 calls ncclAllReduce with one element more: every rank's sync reports the
//                mismatch
//   abort        rank 1 aborts instead of calling: rank 0's sync names rank 1's abort
//   join         only ncclCommInitRank (started with a rank missing: it must fail naming that rank)
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_rank = 0;

[[noreturn]] void die(const std::string& what) {
  std::printf("rank %d: FAILED: %s\n", g_rank, what.c_str());
  std::exit(1);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) die(std::string(what) + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(nullptr));
}

ncclUniqueId exchange_id(int rank, const std::string& path) {
  ncclUniqueId id{};
  if (rank == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    {
      std::ofstream out(path + ".tmp", std::ios::binary);
      out.write(id.internal, sizeof id.internal);
    }
    std::rename((path + ".tmp").c_str(), path.c_str());
    return id;
  }
  for (int i = 0; i < 30000; ++i) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof id.internal)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  die("rank 0 never wrote the unique id to " + path);
}

template <class T>
T* upload(const std::vector<T>& host) {
  void* p = nullptr;
  check(cudaMalloc(&p, host.size() * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  return static_cast<T*>(p);
}
template <class T>
std::vector<T> download(const T* p, size_t n) {
  std::vector<T> host(n);
  check(cudaMemcpy(host.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
  return host;
}
template <class T>
void expect_equal(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  if (got.size() != want.size() || std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) != 0)
    die(std::string(what) + ": the result differs from the host's rank-order computation");
}

// This rank's f32 values: sums of them depend on the order of the additions.
std::vector<float> values(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>(rank + 1) + static_cast<float>(i) * 1e-3f;
  return v;
}

void collectives(ncclComm_t comm, cudaStream_t s, int rank, int n) {
  const size_t count = 1000;
  for (int round = 0; round < 2; ++round) {  // twice: the files of one call must not disturb the next
    // all-reduce (sum, f32), out of place
    float* send = upload(values(rank, count));
    float* recv = upload(std::vector<float>(count, -1.0f));
    check(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
    // broadcast from the last rank, in place
    std::vector<int32_t> mine(count, 100 * rank);
    int32_t* bcast = upload(mine);
    check(ncclBroadcast(bcast, bcast, count, ncclInt32, n - 1, comm, s), "ncclBroadcast");
    // all-gather and reduce-scatter (max, int32), in group calls
    int32_t* gsend = upload(std::vector<int32_t>(count, rank + round));
    int32_t* gather = upload(std::vector<int32_t>(count * n, -1));
    float* rs_send = upload(values(rank, count * n));
    float* rs_recv = upload(std::vector<float>(count, -1.0f));
    check(ncclGroupStart(), "ncclGroupStart");
    check(ncclAllGather(gsend, gather, count, ncclInt32, comm, s), "ncclAllGather");
    check(ncclReduceScatter(rs_send, rs_recv, count, ncclFloat32, ncclMax, comm, s), "ncclReduceScatter");
    check(ncclGroupEnd(), "ncclGroupEnd");
    // reduce (sum) to rank 0
    float* red = upload(std::vector<float>(count, -1.0f));
    check(ncclReduce(send, red, count, ncclFloat32, ncclSum, 0, comm, s), "ncclReduce");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");

    std::vector<float> sum = values(0, count);
    for (int r = 1; r < n; ++r) {
      const std::vector<float> theirs = values(r, count);
      for (size_t i = 0; i < count; ++i) sum[i] += theirs[i];  // in rank order, as NCCL's simulator
    }
    expect_equal(download(recv, count), sum, "ncclAllReduce");
    expect_equal(download(bcast, count), std::vector<int32_t>(count, 100 * (n - 1)), "ncclBroadcast");
    std::vector<int32_t> gathered;
    for (int r = 0; r < n; ++r) gathered.insert(gathered.end(), count, r + round);
    expect_equal(download(gather, count * n), gathered, "ncclAllGather");
    std::vector<float> max = values(n - 1, count * n);  // the values grow with the rank
    expect_equal(download(rs_recv, count), std::vector<float>(max.begin() + rank * count, max.begin() + (rank + 1) * count),
                 "ncclReduceScatter");
    expect_equal(download(red, count), rank == 0 ? sum : std::vector<float>(count, -1.0f), "ncclReduce");
    for (void* p : {static_cast<void*>(send), static_cast<void*>(recv), static_cast<void*>(bcast), static_cast<void*>(gsend),
                    static_cast<void*>(gather), static_cast<void*>(rs_send), static_cast<void*>(rs_recv),
                    static_cast<void*>(red)})
      check(cudaFree(p), "cudaFree");
  }
  std::printf("rank %d: collectives ok\n", rank);
}

// Runs `sync` and expects it to fail with a message containing `expected`.
template <class F>
void expect_failure(F sync, const std::string& expected) {
  std::string message;
  try {
    const cudaError_t e = sync();
    message = e == cudaSuccess ? "" : cudaGetErrorString(e);
  } catch (const std::exception& e) {
    message = e.what();
  }
  if (message.find(expected) == std::string::npos) die("expected a failure naming '" + expected + "', got '" + message + "'");
  std::printf("rank %d: failed as expected: %s\n", g_rank, message.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: sim_nccl_peer collectives|mismatch|abort|join RANK NRANKS ID_FILE\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int rank = std::atoi(argv[2]), n = std::atoi(argv[3]);
  g_rank = rank;
  const ncclUniqueId id = exchange_id(rank, argv[4]);
  ncclComm_t comm = nullptr;
  const ncclResult_t joined = ncclCommInitRank(&comm, n, id, rank);
  if (mode == "join") {
    if (joined == ncclSuccess) die("ncclCommInitRank succeeded with a rank missing");
    std::printf("rank %d: ncclCommInitRank failed as expected: %s\n", rank, ncclGetLastError(nullptr));
    return 0;
  }
  check(joined, "ncclCommInitRank");
  cudaStream_t s = nullptr;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  if (mode == "collectives") {
    collectives(comm, s, rank, n);
  } else if (mode == "mismatch") {
    const size_t count = rank == 1 ? 5 : 4;
    float* buf = upload(std::vector<float>(count, 1.0f));
    check(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
    expect_failure([&] { return cudaStreamSynchronize(s); }, "mismatched NCCL calls");
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    if (async != ncclInvalidUsage) die("the async error is not ncclInvalidUsage");
  } else if (mode == "abort") {
    if (rank == 1) {
      check(ncclCommAbort(comm), "ncclCommAbort");
      std::printf("rank 1: aborted\n");
      return 0;
    }
    float* buf = upload(std::vector<float>(4, 1.0f));
    check(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
    expect_failure([&] { return cudaStreamSynchronize(s); }, "rank 1 called ncclCommAbort");
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    if (async != ncclRemoteError) die("the async error is not ncclRemoteError");
  } else {
    die("unknown mode " + mode);
  }
  check(ncclCommDestroy(comm), "ncclCommDestroy");
  return 0;
}
