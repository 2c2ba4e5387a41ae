// The all-reduce lab: nccl-tests' all_reduce_perf, reduced to what segtrain's data parallelism uses
// (ncclAllReduce, sum, one process driving every GPU through ncclCommInitAll and group calls, as
// `segtrain train --gpus 0-3` does). For each size from --min-bytes to --max-bytes (x --factor):
//   1. every rank's send buffer holds small integers that depend on the rank and the index, so the
//      sum over ranks is exact in f32, f16 and bf16 and known in closed form;
//   2. out of place: --warmup calls, then --iters calls timed on the host between stream syncs (as
//      nccl-tests does), then every element of every rank's result is checked;
//   3. in place (recvbuff == sendbuff): one call checked, then --iters calls timed;
//   4. one line per size: time, algbw = bytes / time, busbw = algbw * 2(n-1)/n (nccl-tests' bus
//      bandwidth for all-reduce: what each link carries in a ring), and the wrong elements.
// On one GPU NCCL's all-reduce is a local copy (busbw is 0 by definition): the line checks NCCL
// works and measures the device's copy bandwidth. With several GPUs it measures the interconnect.
//
//   lab_allreduce [--min-bytes B] [--max-bytes B] [--factor F] [--iters N] [--warmup W]
//                 [--dtype f32|f16|bf16] [--gpus N]
//   sizes take a K, M or G suffix (powers of 1024); defaults 8 B .. 1 G, x2, 20 iterations, 5 warm-up,
//   f32, every GPU. Exit status: 0 all correct, 1 a wrong element or an NCCL error, 2 usage, 4 no GPU.
//
// lab_allreduce is the nvcc build (CUDA + NCCL; tools/gpu_check.sh runs it on the lent GPU);
// lab_allreduce_sim the same file on the simulator's devices and NCCL (SEG_SIM_DEVICES=2, small
// sizes; a ctest, label sim), where the times are the simulator's host time, not a GPU's.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common/half.h"

namespace {

#ifdef SEG_LAB_SIM
constexpr bool kSimulated = true;
#else
constexpr bool kSimulated = false;
#endif

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "lab_allreduce: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(4);
  }
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    std::fprintf(stderr, "lab_allreduce: %s: %s (%s)\n", what, ncclGetErrorString(r), ncclGetLastError(nullptr));
    std::exit(1);
  }
}

[[noreturn]] void usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "lab_allreduce: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: lab_allreduce [--min-bytes B] [--max-bytes B] [--factor F] [--iters N] [--warmup W]\n"
               "                     [--dtype f32|f16|bf16] [--gpus N]   (B with an optional K, M or G suffix)\n");
  std::exit(2);
}

size_t parse_bytes(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  double scale = 1;
  const std::string suffix = end ? end : "";
  if (suffix == "K") scale = 1024.0;
  else if (suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "G") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) usage(flag + " takes bytes with an optional K, M or G suffix, not '" + v + "'");
  if (v.empty() || !(x > 0)) usage(flag + " must be a positive size, not '" + v + "'");
  return static_cast<size_t>(x * scale);
}

int parse_int(const std::string& flag, const std::string& v, int min) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < min || x > 1000000) usage(flag + " takes an integer >= " + std::to_string(min) + ", not '" + v + "'");
  return static_cast<int>(x);
}

struct Type {
  const char* name;
  ncclDataType_t nccl;
  size_t bytes;
};

// The value rank r holds at index i: an integer in [-8, 8] + r. The sum over n ranks,
// n * ((i % 17) - 8) + n(n-1)/2, has magnitude below 256 for n <= 8 (exact in bf16) and below 2048
// for n <= 64 (exact in f16).
float value(int rank, size_t i) { return static_cast<float>(static_cast<int>(i % 17) - 8 + rank); }
float expected(int nranks, size_t i) {
  return static_cast<float>(nranks * (static_cast<int>(i % 17) - 8) + nranks * (nranks - 1) / 2);
}

// Host buffers in the element type: encode / decode through float.
void encode(const Type& t, const std::vector<float>& src, std::vector<unsigned char>& dst, size_t count) {
  dst.resize(count * t.bytes);
  for (size_t i = 0; i < count; ++i) {
    if (t.nccl == ncclFloat32) std::memcpy(&dst[i * 4], &src[i], 4);
    else if (t.nccl == ncclFloat16) {
      const seg::f16 h(src[i]);
      std::memcpy(&dst[i * 2], &h, 2);
    } else {
      const seg::bf16 h(src[i]);
      std::memcpy(&dst[i * 2], &h, 2);
    }
  }
}
float decode(const Type& t, const unsigned char* p) {
  if (t.nccl == ncclFloat32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (t.nccl == ncclFloat16) {
    seg::f16 h;
    std::memcpy(&h, p, 2);
    return static_cast<float>(h);
  }
  seg::bf16 h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

struct Rank {
  int device = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  std::vector<unsigned char> pattern;  // this rank's send values, encoded, for the largest size
};

void sync_all(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) {
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
    cuda_check(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize (all-reduce)");
  }
}

// One all-reduce of `count` elements on every rank, as one group (one host thread drives all GPUs).
void all_reduce(std::vector<Rank>& ranks, const Type& t, size_t count, bool in_place) {
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (Rank& r : ranks)
    nccl_check(ncclAllReduce(in_place ? r.recv : r.send, r.recv, count, t.nccl, ncclSum, r.comm, r.stream),
               "ncclAllReduce");
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
}

void upload(std::vector<Rank>& ranks, size_t bytes, bool into_recv) {
  for (Rank& r : ranks) {
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
    cuda_check(cudaMemcpy(into_recv ? r.recv : r.send, r.pattern.data(), bytes, cudaMemcpyHostToDevice), "upload");
  }
}

// Wrong elements of every rank's recv buffer (NaN and inf are wrong: the expected sums are finite).
size_t count_wrong(std::vector<Rank>& ranks, const Type& t, size_t count, std::vector<unsigned char>& host) {
  size_t wrong = 0;
  host.resize(count * t.bytes);
  for (Rank& r : ranks) {
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
    cuda_check(cudaMemcpy(host.data(), r.recv, count * t.bytes, cudaMemcpyDeviceToHost), "download");
    for (size_t i = 0; i < count; ++i)
      if (decode(t, &host[i * t.bytes]) != expected(static_cast<int>(ranks.size()), i)) ++wrong;
  }
  return wrong;
}

double timed_us(std::vector<Rank>& ranks, const Type& t, size_t count, bool in_place, int iters) {
  sync_all(ranks);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) all_reduce(ranks, t, count, in_place);
  sync_all(ranks);
  const std::chrono::duration<double, std::micro> d = std::chrono::steady_clock::now() - t0;
  return d.count() / iters;
}

std::string size_text(size_t bytes) {
  char buf[32];
  if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) std::snprintf(buf, sizeof buf, "%zu GiB", bytes >> 30);
  else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) std::snprintf(buf, sizeof buf, "%zu MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0) std::snprintf(buf, sizeof buf, "%zu KiB", bytes >> 10);
  else std::snprintf(buf, sizeof buf, "%zu B", bytes);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  size_t min_bytes = 8, max_bytes = size_t{1} << 30;
  int factor = 2, iters = 20, warmup = 5, gpus = 0;
  Type type{"float", ncclFloat32, 4};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") usage("");
    if (i + 1 >= argc) usage(a + " needs a value (or is not an option)");
    const std::string v = argv[++i];
    if (a == "--min-bytes") min_bytes = parse_bytes(a, v);
    else if (a == "--max-bytes") max_bytes = parse_bytes(a, v);
    else if (a == "--factor") factor = parse_int(a, v, 2);
    else if (a == "--iters") iters = parse_int(a, v, 1);
    else if (a == "--warmup") warmup = parse_int(a, v, 0);
    else if (a == "--gpus") gpus = parse_int(a, v, 1);
    else if (a == "--dtype") {
      if (v == "f32") type = {"float", ncclFloat32, 4};
      else if (v == "f16") type = {"half", ncclFloat16, 2};
      else if (v == "bf16") type = {"bfloat16", ncclBfloat16, 2};
      else usage("--dtype takes f32, f16 or bf16, not '" + v + "'");
    } else usage("unknown option '" + a + "'");
  }
  if (min_bytes > max_bytes) usage("--min-bytes is larger than --max-bytes");

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "lab_allreduce: no CUDA device%s\n",
                 kSimulated ? " (set SEG_SIM_DEVICES)" : " (the simulated build is lab_allreduce_sim)");
    return 4;
  }
  if (gpus == 0) gpus = devices;
  if (gpus > devices) usage("--gpus " + std::to_string(gpus) + " but only " + std::to_string(devices) + " device(s) answer");
  if (type.nccl != ncclFloat32 && gpus > 8) usage("f16/bf16 sums are exact only up to 8 ranks: use --dtype f32");
  const size_t max_count = std::max<size_t>(max_bytes / type.bytes, 1);

  std::vector<Rank> ranks(static_cast<size_t>(gpus));
  std::vector<int> devlist(static_cast<size_t>(gpus));
  std::string names;
  for (int r = 0; r < gpus; ++r) {
    devlist[static_cast<size_t>(r)] = r;
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, r), "cudaGetDeviceProperties");
    names += (r ? ", " : "") + std::to_string(r) + " " + prop.name;
  }
  std::vector<ncclComm_t> comms(static_cast<size_t>(gpus));
  nccl_check(ncclCommInitAll(comms.data(), gpus, devlist.data()), "ncclCommInitAll");
  std::vector<float> values(max_count);
  for (int r = 0; r < gpus; ++r) {
    Rank& k = ranks[static_cast<size_t>(r)];
    k.device = r;
    k.comm = comms[static_cast<size_t>(r)];
    cuda_check(cudaSetDevice(r), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaMalloc(&k.send, max_count * type.bytes), "cudaMalloc (send buffer)");
    cuda_check(cudaMalloc(&k.recv, max_count * type.bytes), "cudaMalloc (recv buffer)");
    for (size_t i = 0; i < max_count; ++i) values[i] = value(r, i);
    encode(type, values, k.pattern, max_count);
  }
  int version = 0;
  nccl_check(ncclGetVersion(&version), "ncclGetVersion");
  std::printf("# lab_allreduce: ncclAllReduce sum, %s, NCCL %d.%d.%d, %d rank(s), one process (ncclCommInitAll): %s%s\n",
              type.name, version / 10000, version / 100 % 100, version % 100, gpus, names.c_str(),
              kSimulated ? "  [simulated devices: times are the simulator's host time, not a GPU's]" : "");
  std::printf("# %d warm-up + %d timed calls per size, host time between stream syncs; busbw = algbw * 2(n-1)/n%s\n",
              warmup, iters, gpus == 1 ? " = 0 on one rank (a local copy: algbw is the device's copy bandwidth)" : "");
  std::printf("#%11s %12s %8s %6s   %10s %10s %10s %7s   %10s %10s %10s %7s\n", "", "", "", "", "out-of-place", "", "",
              "", "in-place", "", "", "");
  std::printf("#%11s %12s %8s %6s   %10s %10s %10s %7s   %10s %10s %10s %7s\n", "size", "count", "type", "redop",
              "time(us)", "algbw", "busbw", "#wrong", "time(us)", "algbw", "busbw", "#wrong");
  std::printf("#%11s %12s %8s %6s   %10s %10s %10s %7s   %10s %10s %10s %7s\n", "(B)", "(elements)", "", "", "",
              "(GB/s)", "(GB/s)", "", "", "(GB/s)", "(GB/s)", "");
  const double bus_factor = 2.0 * (gpus - 1) / gpus;
  size_t total_wrong = 0, sizes = 0, last_bytes = 0;
  double busbw_sum = 0, last_algbw = 0, last_busbw = 0;
  std::vector<unsigned char> host;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= static_cast<size_t>(factor)) {
    const size_t count = std::max<size_t>(bytes / type.bytes, 1), nbytes = count * type.bytes;
    upload(ranks, nbytes, false);
    for (int i = 0; i < warmup; ++i) all_reduce(ranks, type, count, false);
    const double oop_us = timed_us(ranks, type, count, false, iters);
    const size_t oop_wrong = count_wrong(ranks, type, count, host);
    upload(ranks, nbytes, true);
    all_reduce(ranks, type, count, true);
    sync_all(ranks);
    const size_t ip_wrong = count_wrong(ranks, type, count, host);
    const double ip_us = timed_us(ranks, type, count, true, iters);  // values grow; only the time counts
    const double oop_alg = nbytes / (oop_us * 1e-6) / 1e9, ip_alg = nbytes / (ip_us * 1e-6) / 1e9;
    std::printf(" %11zu %12zu %8s %6s   %10.2f %10.2f %10.2f %7zu   %10.2f %10.2f %10.2f %7zu\n", nbytes, count, type.name,
                "sum", oop_us, oop_alg, oop_alg * bus_factor, oop_wrong, ip_us, ip_alg, ip_alg * bus_factor, ip_wrong);
    std::fflush(stdout);
    total_wrong += oop_wrong + ip_wrong;
    busbw_sum += oop_alg * bus_factor;
    ++sizes;
    last_bytes = nbytes, last_algbw = oop_alg, last_busbw = oop_alg * bus_factor;
    if (bytes > max_bytes / static_cast<size_t>(factor)) break;  // the next step would pass max (or overflow)
  }
  std::printf("# wrong elements: %zu %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
  std::printf("# avg bus bandwidth: %.3f GB/s (out of place, %zu sizes)\n", sizes ? busbw_sum / sizes : 0.0, sizes);
  std::printf("lab_allreduce: %d rank(s), %zu sizes %s..%s, %zu wrong elements; %s out of place: algbw %.2f GB/s, busbw %.2f GB/s\n",
              gpus, sizes, size_text(min_bytes).c_str(), size_text(last_bytes).c_str(), total_wrong,
              size_text(last_bytes).c_str(), last_algbw, last_busbw);
  for (Rank& r : ranks) {
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
    ncclCommDestroy(r.comm);
    cudaFree(r.send);
    cudaFree(r.recv);
    cudaStreamDestroy(r.stream);
  }
  return total_wrong ? 1 : 0;
}
