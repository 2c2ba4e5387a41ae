// Communicator: how the ranks of a data-parallel run talk to each other (DESIGN decision 8).
//
// One interface, several backends; the training code never knows which one it has:
//   single process   size 1, every collective is the identity (core/comm.cpp)
//   MPI              N CPU processes started by mpirun, on one machine or several (core/comm_mpi.cpp,
//                    built when CMake finds MPI: -DSEG_MPI=ON, the default with OpenMPI installed)
//   NCCL             GPUs: one process with a thread per GPU, or one process per GPU under mpirun
//                    (core/comm_nccl.cpp; collectives are queued on the device's current stream)
//
// world() picks the backend once per process: MPI when the process was started by mpirun (Open MPI
// sets OMPI_COMM_WORLD_SIZE; PMI_SIZE / PMIX_RANK for other launchers) and the build has MPI, the
// single process otherwise. A plain `segtrain train` therefore never initialises MPI.
//
// Every collective is blocking unless its name says otherwise, and every rank must call the same
// collectives in the same order (as in MPI). Buffers are the memory of device(): host memory for the
// single process and MPI; for NCCL the GPU's memory, where "blocking" means ordered on the device's
// current stream (work queued after the call sees the result, the host does not wait). An NCCL
// communicator also takes small host buffers (the run check, the stop flag), staged and waited for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"

namespace seg {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // For the start-up line: "single process" or "MPI (Open MPI v4.1.4): rank 0 of 2, host a".
  virtual std::string describe() const = 0;
  // Where the collectives' buffers live (the CPU, or this rank's GPU).
  virtual Device device() const { return Device::cpu(); }

  // In place: data[i] = sum over ranks of data[i], for n values of `dtype` (f32, f64, f16, bf16;
  // the 16-bit ones are added in f32 and rounded back at each step of the reduction, so a sum of
  // two ranks is the correctly rounded sum).
  virtual void allreduce_sum_typed(void* data, int64_t n, DType dtype) = 0;
  void allreduce_sum(float* data, int64_t n) { allreduce_sum_typed(data, n, DType::f32); }
  void allreduce_sum(double* data, int64_t n) { allreduce_sum_typed(data, n, DType::f64); }
  // In place: data[i] = max over ranks of data[i] (the found-inf and stop flags).
  virtual void allreduce_max(int32_t* data, int64_t n) = 0;

  // A sum started now and finished by wait(): lets a gradient bucket travel while backward goes on.
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual void wait() = 0;  // afterwards the buffer holds the sum; idempotent
    // Lets the transfer advance without waiting (MPI progresses non-blocking collectives only
    // inside MPI calls); true when it is complete.
    virtual bool test() { return false; }
  };
  virtual std::unique_ptr<Pending> allreduce_sum_async_typed(void* data, int64_t n, DType dtype) = 0;
  std::unique_ptr<Pending> allreduce_sum_async(float* data, int64_t n) {
    return allreduce_sum_async_typed(data, n, DType::f32);
  }

  // Rank root's bytes to every rank.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  // Every rank's value, in rank order.
  virtual std::vector<uint64_t> allgather(uint64_t value) = 0;
  virtual void barrier() = 0;

  // A collective that waits longer than this stops the rank with an error naming it (0 = never).
  virtual void set_timeout_seconds(double) {}
  virtual double timeout_seconds() const { return 0.0; }

  // Stops every rank now with this exit code (MPI_Abort): how a rank that fails takes the others
  // down instead of leaving them waiting in a collective. The single process just returns.
  virtual void abort(int exit_code) { (void)exit_code; }

  std::string broadcast_string(const std::string& s, int root);
  // Every rank's string, in rank order (a broadcast from each rank in turn: for short texts such as
  // the start-up line's hosts and devices, or predict's per-image lines, not for bulk data).
  std::vector<std::string> allgather_string(const std::string& s);
  bool is_root() const { return rank() == 0; }
};

// The process's communicator (created on first use, lives until exit).
Communicator& world();
// True when this build can run under mpirun (built with MPI).
bool built_with_mpi();
// True when a launcher (mpirun) started this process as one of several ranks.
bool launched_by_mpi();

// After an error was printed: with several ranks, stops them all (abort); else nothing. Does not
// create the communicator (a failure before training started has no ranks to stop).
void abort_all_ranks_on_error(int exit_code);

// A communicator of size 1 (tests, and world() outside mpirun).
std::unique_ptr<Communicator> make_single_process_communicator();

// True when this build has NCCL (the CUDA build with SEG_NCCL, or the simulator's NCCL in tests).
bool built_with_nccl();
// One process, one thread per GPU (ncclCommInitAll): element i is rank i, driving cuda:devices[i];
// hand each to the thread of its GPU. Error(usage) in a build without NCCL.
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices);
// One process per GPU under mpirun (ncclCommInitRank): rank 0's unique id travels over `processes`,
// and this process's rank drives cuda:device. Every process of `processes` must call it.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& processes, int device);

}  // namespace seg
