// The simulator's NCCL (internal header; the semantics are stated in nccl_collectives.cpp and in
// docs/cuda-simulator.md, "NCCL"): communicators, the calls a collective is made of, and the
// element arithmetic of the reductions.
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/sim/stream_executor.h"

namespace seg::sim::detail::nccl {

enum class Kind : uint8_t { all_reduce, broadcast, reduce, reduce_scatter, all_gather };

// One rank's collective call, as made.
struct Call {
  Kind kind = Kind::all_reduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // the API's count: per rank for reduce_scatter (recvcount) and all_gather (sendcount)
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0;                     // broadcast and reduce only
  CUstream_st* stream = nullptr;    // resolved at the call
  const void* caller = nullptr;     // the user's call site
};

const char* kind_name(Kind kind);         // "ncclAllReduce"
const char* type_name(ncclDataType_t t);  // "float32"; "?" for types the simulator does not reduce
size_t type_size(ncclDataType_t t);       // 0: not supported by the simulator
const char* op_name(ncclRedOp_t op);      // "sum"; "?" for user-defined ops
bool has_op(Kind kind);                   // the call takes a reduction op
bool has_root(Kind kind);
// "ncclAllReduce(count=4, float32, sum)", "ncclBroadcast(count=4, int32, root=1)"
std::string call_text(const Call& call);
// Bytes of sendbuff / recvbuff the call of `rank` of `nranks` reads / writes (0: not used there).
size_t send_bytes(const Call& call, int rank, int nranks);
size_t recv_bytes(const Call& call, int rank, int nranks);

// Whether two ranks' calls are the same collective (kind, count, type, and op and root where the
// kind has them): what the n-th calls of every rank must be.
bool same_collective(const Call& a, const Call& b);
std::string ranks_text(const std::vector<int>& ranks);  // "0, 2"

// out[i] = in[0][i] op in[1][i] op ... op in[n-1][i], in rank order; float16 and bfloat16 are
// rounded to their type after every step (float arithmetic, round to nearest even); avg is the sum
// divided by n (integers: truncated). `out` may alias an input.
void reduce_in_rank_order(const std::vector<const void*>& in, void* out, size_t count, ncclDataType_t type,
                          ncclRedOp_t op);

// How long a collective or ncclCommInitRank waits for missing ranks (SEG_SIM_NCCL_TIMEOUT_S, or
// seg::sim::set_nccl_timeout).
std::chrono::nanoseconds timeout();
std::string seconds_text(std::chrono::nanoseconds t);  // "1.5 s"

class CollectiveJoint;

// The ranks of one communicator, shared by its ncclComm objects (runtime lock).
struct Clique {
  uint64_t number = 0;  // "communicator 3" in reports
  int nranks = 0;
  std::vector<ncclComm*> comms;  // by rank; null once destroyed or aborted
  // Collectives some rank has called and others not yet, by their number (1, 2, ...).
  std::map<uint64_t, std::shared_ptr<CollectiveJoint>> open;
  std::string name() const;  // "communicator 3 (2 ranks)"
};

// ncclCommInitRank's rendezvous: the ranks that joined under one unique id so far.
struct PendingInit {
  int nranks = 0;
  std::vector<ncclComm*> ranks;
  int joined = 0;
  std::string failed;     // set: the init timed out or was aborted
  std::string directory;  // where ranks of other processes announce themselves (nccl_spanning.cpp)
};

// A communicator whose ranks live in several processes (one process per GPU under mpirun):
// nccl_spanning.cpp. Its collectives exchange each rank's send buffer through files in a
// directory named by the unique id, instead of one joint op of this process's executor.
struct Spanning;
// The directory of the unique id made by process `pid` as its `key`-th, with `nonce` (random) so
// that a directory left behind by a killed run is never mistaken for this one's.
std::string spanning_directory(int64_t pid, uint64_t key, uint64_t nonce);
bool spanning_started(const std::string& directory);  // a rank of another process joined
// Joins `comm` (rank, nranks and device set) to the ranks announced in `directory`, and waits for
// all of them (runtime lock not held). Sets comm->spanning on success.
ncclResult_t spanning_join(ncclComm* comm, const std::string& directory);
// Queues this rank's op of its next collective (runtime lock held; the call is validated).
ncclResult_t spanning_enqueue(ncclComm* comm, const Call& call);
// ncclCommDestroy / ncclCommAbort of a spanning rank: tells the peers, and the last one to leave
// removes the directory.
void spanning_leave(ncclComm* comm, bool abort);
ncclResult_t spanning_async_error(const ncclComm* comm);
uint64_t random_nonce();  // for unique ids (runtime lock held)

// Records `message` as NCCL's last error (ncclGetLastError) and returns `result`.
ncclResult_t fail(ncclResult_t result, const std::string& message);

// Fails the collectives of `q` still waiting for ranks that `rank` has not called (`all`: every
// one still waiting), because of `why` (nccl_collectives.cpp; runtime lock held).
void fail_open_collectives(Clique& q, int rank, bool all, const std::string& why);

// Called by ncclGroupEnd (nccl_collectives.cpp): waits for the communicators this thread's group
// initialised (nccl_comms.cpp).
ncclResult_t finish_group_inits(const std::vector<ncclComm*>& comms);
// Whether the calling thread is inside ncclGroupStart/ncclGroupEnd, and remembering an init there.
bool in_group();
void defer_init(ncclComm* comm);

}  // namespace seg::sim::detail::nccl

// The communicator of one rank (the opaque type of nccl.h); fields under the runtime lock.
struct ncclComm {
  int rank = 0;
  int nranks = 0;
  int device = 0;
  std::shared_ptr<seg::sim::detail::nccl::Clique> clique;        // null until every rank joined
  std::shared_ptr<seg::sim::detail::nccl::PendingInit> pending;  // while ncclCommInitRank waits
  uint64_t calls = 0;                                            // collectives this rank has called
  ncclResult_t async_error = ncclSuccess;
  std::shared_ptr<seg::sim::detail::nccl::Spanning> spanning;  // set: the ranks span processes
};
