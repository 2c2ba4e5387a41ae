// The MPI communicator: CPU processes started by mpirun (core/comm.h).
//
// MPI is initialised with MPI_THREAD_FUNNELED: only the main thread calls MPI (the CPU kernels'
// thread pool and the loader workers never do). Errors come back as return codes (MPI_ERRORS_RETURN)
// and become an Error naming the rank and the collective.
//
// A watchdog thread turns a hang into an error: when one collective has waited longer than the
// timeout (--comm-timeout, 300 s by default) the rank prints which collective it was in and exits
// with status 1; mpirun then stops every other rank. A rank that dies (a signal, a data error) is
// reported by mpirun itself, which also stops the others.
#ifdef SEG_WITH_MPI

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/comm.h"
#include "core/error.h"
#include "kernels/common/half.h"

namespace seg {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class MpiCommunicator;

// Marks the time one rank spends inside a collective, for the watchdog.
class Watch {
 public:
  Watch(std::atomic<double>& started, std::atomic<const char*>& what, const char* name) : started_(started) {
    what.store(name);
    started_.store(now_seconds());
  }
  ~Watch() { started_.store(0.0); }

 private:
  std::atomic<double>& started_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_init_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    library_ = std::string(version, static_cast<size_t>(len));
    if (const size_t cut = library_.find_first_of(",\n"); cut != std::string::npos) library_.resize(cut);
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(host, &len);
    host_ = std::string(host, static_cast<size_t>(len));
    if (const char* t = std::getenv("SEG_COMM_TIMEOUT")) timeout_ = std::atof(t);
    MPI_Op_create(&half_sum<f16>, 1, &f16_sum_);
    MPI_Op_create(&half_sum<bf16>, 1, &bf16_sum_);
    watchdog_ = std::thread([this] { watch(); });
  }

  ~MpiCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Op_free(&f16_sum_);
      MPI_Op_free(&bf16_sum_);
    }
    if (owns_init_ && !finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return str("MPI (", library_, "): rank ", rank_, " of ", size_, ", host ", host_);
  }
  void set_timeout_seconds(double seconds) override { timeout_ = seconds; }
  double timeout_seconds() const override { return timeout_; }

  void allreduce_sum_typed(void* data, int64_t n, DType dtype) override {
    const SumOf s = sum_of(dtype);
    allreduce(data, n, s.type, s.op, s.what);
  }
  void allreduce_max(int32_t* data, int64_t n) override { allreduce(data, n, MPI_INT32_T, MPI_MAX, "all-reduce (i32 max)"); }

  std::unique_ptr<Pending> allreduce_sum_async_typed(void* data, int64_t n, DType dtype) override {
    SEG_CHECK(n <= INT_MAX, runtime, "asynchronous all-reduce of ", n, " values: at most ", INT_MAX, " per call");
    const SumOf s = sum_of(dtype);
    auto p = std::make_unique<Request>(*this);
    check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), s.type, s.op, MPI_COMM_WORLD, &p->request), s.what);
    return p;
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    Watch w(in_collective_since_, collective_, "broadcast");
    auto* p = static_cast<char*>(data);
    for (int64_t done = 0; done < bytes;) {
      const int chunk = static_cast<int>(std::min<int64_t>(bytes - done, INT_MAX));
      check(MPI_Bcast(p + done, chunk, MPI_BYTE, root, MPI_COMM_WORLD), "broadcast");
      done += chunk;
    }
  }

  std::vector<uint64_t> allgather(uint64_t value) override {
    Watch w(in_collective_since_, collective_, "all-gather");
    std::vector<uint64_t> out(static_cast<size_t>(size_));
    check(MPI_Allgather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD), "all-gather");
    return out;
  }

  void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);  // mpirun stops every rank and exits with this code
  }

  void barrier() override {
    Watch w(in_collective_since_, collective_, "barrier");
    check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
  }

 private:
  struct Request final : Pending {
    explicit Request(MpiCommunicator& c) : comm(c) {}
    ~Request() override {
      if (request != MPI_REQUEST_NULL) MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    bool test() override {
      if (request == MPI_REQUEST_NULL) return true;
      int done = 0;
      comm.check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "testing an asynchronous all-reduce");
      return done != 0;
    }
    void wait() override {
      if (request == MPI_REQUEST_NULL) return;
      Watch w(comm.in_collective_since_, comm.collective_, "all-reduce (f32 sum, asynchronous)");
      comm.check(MPI_Wait(&request, MPI_STATUS_IGNORE), "waiting for an asynchronous all-reduce");
    }
    MpiCommunicator& comm;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  // MPI has no 16-bit float types: f16 and bf16 travel as MPI_UINT16_T with our own sum, which adds
  // in f32 and rounds back (kernels/common/half.h conversions).
  struct SumOf {
    MPI_Datatype type;
    MPI_Op op;
    const char* what;
  };
  SumOf sum_of(DType dtype) const {
    switch (dtype) {
      case DType::f32: return {MPI_FLOAT, MPI_SUM, "all-reduce (f32 sum)"};
      case DType::f64: return {MPI_DOUBLE, MPI_SUM, "all-reduce (f64 sum)"};
      case DType::f16: return {MPI_UINT16_T, f16_sum_, "all-reduce (f16 sum)"};
      case DType::bf16: return {MPI_UINT16_T, bf16_sum_, "all-reduce (bf16 sum)"};
      default: break;
    }
    throw Error(ErrorKind::runtime, str("all-reduce of ", dtype_name(dtype), " values: only f32, f64, f16 and bf16 sum"));
  }
  template <class H>
  static void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    const auto* a = static_cast<const H*>(in);
    auto* b = static_cast<H*>(inout);
    for (int i = 0; i < *len; ++i) b[i] = H(static_cast<float>(a[i]) + static_cast<float>(b[i]));
  }

  void allreduce(void* data, int64_t n, MPI_Datatype type, MPI_Op op, const char* what) {
    Watch w(in_collective_since_, collective_, what);
    int size = 0;
    MPI_Type_size(type, &size);
    auto* p = static_cast<char*>(data);
    for (int64_t done = 0; done < n;) {
      const int chunk = static_cast<int>(std::min<int64_t>(n - done, INT_MAX));
      check(MPI_Allreduce(MPI_IN_PLACE, p + done * size, chunk, type, op, MPI_COMM_WORLD), what);
      done += chunk;
    }
  }

  void check(int code, const char* what) const {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    throw Error(ErrorKind::runtime, str("rank ", rank_, " of ", size_, ": MPI ", what, " failed: ",
                                        std::string(text, static_cast<size_t>(len))))
        .hint("another rank has probably stopped; its own message says why");
  }

  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250));
      const double since = in_collective_since_.load(), limit = timeout_.load();
      if (since > 0 && limit > 0 && now_seconds() - since > limit) {
        std::fprintf(stderr,
                     "segtrain: error: rank %d of %d waited %.0f s in an MPI %s: another rank has stopped or is "
                     "stuck (--comm-timeout %.0f s); stopping this rank\n",
                     rank_, size_, now_seconds() - since, collective_.load(), limit);
        std::fflush(stderr);
        std::_Exit(1);  // mpirun sees the failure and stops every rank
      }
    }
  }

  int rank_ = 0, size_ = 1;
  bool owns_init_ = false;
  MPI_Op f16_sum_ = MPI_OP_NULL, bf16_sum_ = MPI_OP_NULL;
  std::string library_, host_;
  std::atomic<double> timeout_{300.0};
  std::atomic<double> in_collective_since_{0.0};
  std::atomic<const char*> collective_{""};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace seg

#endif  // SEG_WITH_MPI
