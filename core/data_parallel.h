// Data parallel over a Communicator (core/comm.h): what keeps N ranks training one model.
//
//   broadcast_from_root(comm, tensors)   at start: every rank takes rank 0's parameters and buffers,
//                                        so all ranks start from the same model whatever their RNG
//   GradientAllReduce                    after backward: every gradient becomes the sum over the
//                                        ranks; the caller pre-divides (each rank's loss seed is
//                                        1/size of one process's), so the sum is the average
//   check_same_run(comm, description)    at start: stops every rank, naming the difference, when
//                                        the ranks were started with different runs
//
// GradientAllReduce in buckets. The parameters are grouped, in reverse registration order (the order
// backward produces their gradients: the decoder's last layer first), into buckets of about
// `bucket_bytes` (25 MB by default, as DDP). Each parameter's "gradient ready" hook (core/autograd.h)
// counts; when the last gradient of a bucket is ready the bucket is packed (f32) and its all-reduce
// starts at once, asynchronously, while backward goes on computing the earlier layers' gradients.
// A bucket holds parameters of one wire dtype (GradientWire below).
// finish() packs what is left, waits for every bucket and writes the sums back into the gradients.
// Every hook also tests the buckets in flight (MPI moves non-blocking collectives only inside MPI
// calls). A model that fits one bucket has nothing to overlap: its one all-reduce is a blocking one
// in finish(), which Open MPI does faster than a non-blocking one.
//
// Why the division comes before backward (Horovod's and Apex's "predivide"), not after: under fp16
// a rank's gradients then have the magnitude one process's micro-batch gradients have (the loss
// scaler overflows at the same steps), and the step is the same computation as one process running
// the size sub-batches as gradient accumulation: bit for bit in f32 (tests/mpi).
//
// Per parameter the bucket also carries a 1 when this rank has a gradient for it: a parameter that
// got a gradient on some ranks only is summed over all ranks (a missing one counts as zeros, as in
// DDP with find_unused_parameters), and one that got none anywhere keeps no gradient, so the
// optimizer skips it exactly as a single process would.
//
// Gradient accumulation: set_sync(false) for the micro-steps whose gradients only accumulate (their
// hooks are ignored), set_sync(true) before the last one.
//
// Memory traffic per step: every gradient is read and written once more (pack, unpack), plus the
// all-reduce's own traffic (about 2 (size-1)/size of the bucket bytes per rank for ring algorithms);
// half gradients on a storage wire halve both.
// On GPUs (an NCCL communicator, core/comm_nccl.cpp) each bucket is a device tensor: packing and
// unpacking are copy kernels on the compute stream, the all-reduce runs on the communicator's own
// stream fenced by events, so it overlaps the rest of backward on the device; no has-gradient
// flags travel there (a parameter no rank has a gradient for ends with a zero gradient).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/tensor.h"

namespace seg {

void broadcast_from_root(Communicator& comm, const std::vector<Tensor>& tensors);

// Throws Error(usage) on every rank when the ranks' descriptions (lines "key = value") differ; the
// message of a rank that differs names each differing line with rank 0's value and its own.
void check_same_run(Communicator& comm, const std::string& description);

// What the gradients travel as. storage: each parameter's own dtype (half gradients of O2/O3 models
// travel as f16/bf16, half the bytes; summed in f32 and rounded per step of the reduction); f32:
// everything widened to f32 (and rounded once, when written back). f64 stays f64 either way.
enum class GradientWire { storage, f32 };
DType gradient_wire_dtype(DType param, GradientWire wire);

class GradientAllReduce {
 public:
  static constexpr int64_t kDefaultBucketBytes = 25LL << 20;

  // `params` in registration order (Module::parameters()); every one on the CPU.
  GradientAllReduce(Communicator& comm, std::vector<Tensor> params, int64_t bucket_bytes = kDefaultBucketBytes,
                    GradientWire wire = GradientWire::storage);
  ~GradientAllReduce();
  GradientAllReduce(const GradientAllReduce&) = delete;
  GradientAllReduce& operator=(const GradientAllReduce&) = delete;

  void set_sync(bool on);
  // Completes every bucket: afterwards each gradient is the sum over the ranks.
  void finish();

  struct Stats {
    int64_t buckets = 0;                // how many buckets the parameters form
    int64_t started_in_backward = 0;    // of the last finish(): buckets whose all-reduce a hook started
    int64_t bytes = 0;                  // bytes all-reduced per step (gradients + one flag per parameter)
    int64_t half_buckets = 0;           // buckets that travel as f16/bf16
  };
  Stats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // the hooks hold it weakly: they outlive this object harmlessly
  int64_t last_started_in_backward_ = 0;
};

}  // namespace seg
