#include "core/comm.h"

#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace seg {

#ifdef SEG_WITH_MPI
std::unique_ptr<Communicator> make_mpi_communicator();  // core/comm_mpi.cpp
#endif

namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "single process"; }
  void allreduce_sum_typed(void*, int64_t, DType) override {}
  void allreduce_max(int32_t*, int64_t) override {}
  std::unique_ptr<Pending> allreduce_sum_async_typed(void*, int64_t, DType) override {
    struct Done final : Pending {
      void wait() override {}
      bool test() override { return true; }
    };
    return std::make_unique<Done>();
  }
  void broadcast(void*, int64_t, int root) override {
    SEG_CHECK(root == 0, runtime, "broadcast from rank ", root, " in a single process");
  }
  std::vector<uint64_t> allgather(uint64_t value) override { return {value}; }
  void barrier() override {}
};

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

std::string Communicator::broadcast_string(const std::string& s, int root) {
  uint64_t n = s.size();
  broadcast(&n, sizeof n, root);
  std::string out = rank() == root ? s : std::string(n, '\0');
  if (n > 0) broadcast(out.data(), static_cast<int64_t>(n), root);
  return out;
}

std::vector<std::string> Communicator::allgather_string(const std::string& s) {
  std::vector<std::string> out(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) out[static_cast<size_t>(r)] = broadcast_string(s, r);
  return out;
}

std::unique_ptr<Communicator> make_single_process_communicator() { return std::make_unique<SingleProcess>(); }

bool built_with_mpi() {
#ifdef SEG_WITH_MPI
  return true;
#else
  return false;
#endif
}

bool launched_by_mpi() {
  return env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMI_SIZE") || env_set("PMIX_RANK");
}

namespace {
std::unique_ptr<Communicator>& world_slot() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}
}  // namespace

void abort_all_ranks_on_error(int exit_code) {
  std::unique_ptr<Communicator>& comm = world_slot();
  if (comm && comm->size() > 1) comm->abort(exit_code);
}

Communicator& world() {
  std::unique_ptr<Communicator>& comm = world_slot();
  static std::once_flag once;
  std::call_once(once, [&comm] {
    if (launched_by_mpi()) {
#ifdef SEG_WITH_MPI
      comm = make_mpi_communicator();
#else
      // mpirun started several copies of a build without MPI: each would train alone and they
      // would overwrite each other's files. Refuse instead.
      const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
      if (n != nullptr && std::atoi(n) > 1)
        throw Error(ErrorKind::usage, str("started by mpirun as one of ", n,
                                          " ranks, but this segtrain was built without MPI"))
            .hint("install OpenMPI (libopenmpi-dev) and rebuild with -DSEG_MPI=ON, or run without mpirun");
#endif
    }
    if (!comm) comm = make_single_process_communicator();
  });
  return *comm;
}

}  // namespace seg
