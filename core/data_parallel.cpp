#include "core/data_parallel.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "core/autograd.h"
#include "core/error.h"
#include "core/fileio.h"

namespace seg {

// ---------------------------------------------------------------- broadcast and run check

void broadcast_from_root(Communicator& comm, const std::vector<Tensor>& tensors) {
  if (comm.size() == 1) return;
  for (const Tensor& t : tensors) {
    // Host tensors travel on every communicator (an NCCL one stages them: BatchNorm's batch
    // counter stays on the host); device tensors only on their GPU's.
    SEG_CHECK((t.device() == comm.device() || t.device().is_cpu()) && t.is_contiguous(), runtime, "broadcast_from_root: ",
              t.str(), " must be a contiguous tensor on ", comm.device().str(), " or the CPU");
    comm.broadcast(t.data_ptr(), static_cast<int64_t>(t.nbytes()), 0);
  }
}

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string key_of(const std::string& line) { return line.substr(0, line.find(" = ")); }

}  // namespace

void check_same_run(Communicator& comm, const std::string& description) {
  if (comm.size() == 1) return;
  const std::vector<uint64_t> hashes = comm.allgather(digest_of(description.data(), description.size()).hash);
  std::vector<int> differing;
  for (int r = 1; r < comm.size(); ++r)
    if (hashes[static_cast<size_t>(r)] != hashes[0]) differing.push_back(r);
  if (differing.empty()) return;
  // Each differing rank names its differing lines; every rank learns every rank's list, so the
  // message is complete whichever rank's error stops the job first.
  const std::string root = comm.broadcast_string(description, 0);
  std::string my_diff;
  if (comm.rank() != 0 && hashes[static_cast<size_t>(comm.rank())] != hashes[0]) {
    std::unordered_map<std::string, std::string> theirs;
    for (const std::string& l : lines_of(root)) theirs[key_of(l)] = l;
    for (const std::string& mine : lines_of(description)) {
      const auto it = theirs.find(key_of(mine));
      const std::string root_line = it == theirs.end() ? "(absent)" : it->second;
      if (root_line != mine)
        my_diff += "; rank 0: '" + root_line + "', rank " + std::to_string(comm.rank()) + ": '" + mine + "'";
    }
    if (my_diff.empty()) my_diff = "; rank " + std::to_string(comm.rank()) + " lacks lines rank 0 has";
  }
  std::string diff;
  for (int r : differing) diff += comm.broadcast_string(my_diff, r);
  std::string ranks;
  for (int r : differing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  throw Error(ErrorKind::usage, str(differing.size() == 1 ? "rank " : "ranks ", ranks, " of ", comm.size(),
                                    " started with a different run than rank 0", diff))
      .hint("start every rank with the same config, overrides and flags");
}

// ---------------------------------------------------------------- GradientAllReduce

namespace {
// Bytes of one value of `dt`, and the value 1 or 0 in it (the has-gradient flags).
void put_flag(unsigned char* at, DType dt, bool on) {
  const float v = on ? 1.0f : 0.0f;
  switch (dt) {
    case DType::f32: std::memcpy(at, &v, 4); return;
    case DType::f64: { const double d = v; std::memcpy(at, &d, 8); return; }
    case DType::f16: { const f16 h(v); std::memcpy(at, &h, 2); return; }
    case DType::bf16: { const bf16 h(v); std::memcpy(at, &h, 2); return; }
    default: break;
  }
  SEG_ASSERT(false);
}
bool get_flag(const unsigned char* at, DType dt) {
  switch (dt) {
    case DType::f32: { float v; std::memcpy(&v, at, 4); return v != 0.0f; }
    case DType::f64: { double v; std::memcpy(&v, at, 8); return v != 0.0; }
    case DType::f16: { f16 h; std::memcpy(&h, at, 2); return static_cast<float>(h) != 0.0f; }
    case DType::bf16: { bf16 h; std::memcpy(&h, at, 2); return static_cast<float>(h) != 0.0f; }
    default: break;
  }
  SEG_ASSERT(false);
  return false;
}
}  // namespace

DType gradient_wire_dtype(DType param, GradientWire wire) {
  if (param == DType::f64) return DType::f64;  // references and gradient checks: never narrowed
  return wire == GradientWire::storage ? param : DType::f32;
}

struct GradientAllReduce::State {
  struct Bucket {
    DType dtype = DType::f32;          // what travels (gradient_wire_dtype of its parameters)
    std::vector<size_t> params;        // indices into State::params, in the order they are packed
    std::vector<int64_t> offsets;      // of each parameter's values in `buffer`, in values
    int64_t values = 0;                // gradient values (the flags follow them)
    std::vector<unsigned char> buffer; // values, then one has-gradient flag per parameter (CPU)
    Tensor device_buffer;              // values only, 1-D, on the GPU (NCCL communicators)
    size_t ready = 0;                  // hooks seen this step
    std::unique_ptr<Communicator::Pending> pending;
    bool started_by_hook = false;
    bool done = false;                 // its all-reduce completed (seen by a progress test)

    size_t element() const { return dtype_size(dtype); }
    unsigned char* value_at(int64_t i) { return buffer.data() + static_cast<size_t>(i) * element(); }
    bool on_device() const { return device_buffer.defined(); }
    int64_t count() const { return values + (on_device() ? 0 : static_cast<int64_t>(params.size())); }
    void* data() { return on_device() ? device_buffer.data_ptr() : static_cast<void*>(buffer.data()); }
    // The values of its k-th parameter in the device buffer, shaped like it.
    Tensor device_slot(size_t k, const Shape& shape) const {
      const int64_t n = shape.numel();
      return device_buffer.slice(0, offsets[k], offsets[k] + n).view(shape);
    }
  };

  Communicator& comm;
  std::vector<Tensor> params;
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;  // per parameter
  bool sync = true;

  explicit State(Communicator& c) : comm(c) {}

  // Packs the bucket's gradients (in its dtype) and its has-gradient flags into its buffer.
  void pack(Bucket& b) {
    if (b.on_device()) return pack_device(b);
    for (size_t k = 0; k < b.params.size(); ++k) {
      const Tensor& p = params[b.params[k]];
      const Tensor& g = p.grad();
      unsigned char* dst = b.value_at(b.offsets[k]);
      const size_t bytes = static_cast<size_t>(p.numel()) * b.element();
      put_flag(b.value_at(b.values + static_cast<int64_t>(k)), b.dtype, g.defined());
      if (!g.defined()) {
        std::memset(dst, 0, bytes);  // zero is all-zero bits in every float format
        continue;
      }
      const Tensor wire = g.dtype() == b.dtype ? g.contiguous() : g.to(b.dtype).contiguous();
      std::memcpy(dst, wire.data_ptr(), bytes);
    }
  }

  // On a GPU the copies are kernels on the compute stream, queued in the order of backward: no host
  // wait. There are no has-gradient flags (reading them would cost a device-to-host wait per
  // bucket): a parameter without a gradient here adds zeros, and after finish() every parameter
  // has the summed gradient, zeros where no rank had one.
  void pack_device(Bucket& b) {
    for (size_t k = 0; k < b.params.size(); ++k) {
      const Tensor& p = params[b.params[k]];
      Tensor slot = b.device_slot(k, p.shape());
      if (p.grad().defined()) slot.copy_(p.grad());
      else slot.zero_();
    }
  }

  void pack_and_start(Bucket& b) {
    pack(b);
    b.pending = comm.allreduce_sum_async_typed(b.data(), b.count(), b.dtype);
  }

  // MPI advances non-blocking collectives only inside MPI calls: every hook gives the buckets
  // already travelling a push.
  void progress() {
    for (Bucket& b : buckets)
      if (b.pending && !b.done) b.done = b.pending->test();
  }

  void on_ready(size_t index) {
    if (!sync) return;
    progress();
    // One bucket: nothing could overlap it, and a blocking all-reduce in finish() is faster
    // (Open MPI's non-blocking collectives take about 1.6x as long for the same bytes: measured
    // 11.5 ms against 7 ms for 8.6 MB on 2 ranks of the 2-core machine).
    if (buckets.size() == 1) return;
    Bucket& b = buckets[bucket_of[index]];
    if (b.pending) return;  // a parameter used twice: its bucket already left
    if (++b.ready == b.params.size()) {
      pack_and_start(b);
      b.started_by_hook = true;
    }
  }

  void unpack_device(Bucket& b) {
    for (size_t k = 0; k < b.params.size(); ++k) {
      Tensor& p = params[b.params[k]];
      const Tensor slot = b.device_slot(k, p.shape());
      if (p.grad().defined()) {
        Tensor dst = p.grad();
        dst.copy_(slot);  // f32 on the wire, half gradient: rounded once, here
      } else {
        p.set_grad(slot.to(p.dtype()).clone());  // its own storage, not a view of the bucket
      }
    }
  }

  // Writes the bucket's sums back into the gradients (in their storage dtype).
  void unpack(Bucket& b) {
    if (b.on_device()) return unpack_device(b);
    for (size_t k = 0; k < b.params.size(); ++k) {
      Tensor& p = params[b.params[k]];
      if (!get_flag(b.value_at(b.values + static_cast<int64_t>(k)), b.dtype)) continue;  // no rank had one: keep none
      const unsigned char* src = b.value_at(b.offsets[k]);
      const size_t bytes = static_cast<size_t>(p.numel()) * b.element();
      const Tensor& g = p.grad();
      if (g.defined() && g.dtype() == b.dtype && g.is_contiguous()) {
        std::memcpy(g.data_ptr(), src, bytes);  // the common case: no allocation
        continue;
      }
      Tensor sum = Tensor::empty(p.shape(), b.dtype, Device::cpu());
      std::memcpy(sum.data_ptr(), src, bytes);
      if (g.defined()) {
        Tensor dst = g;
        dst.copy_(sum);  // f32 on the wire, half gradient: rounded once, here
      } else {
        p.set_grad(sum.to(p.dtype()));
      }
    }
  }
};

GradientAllReduce::GradientAllReduce(Communicator& comm, std::vector<Tensor> params, int64_t bucket_bytes,
                                     GradientWire wire)
    : state_(std::make_shared<State>(comm)) {
  SEG_CHECK(bucket_bytes > 0, usage, "gradient bucket size must be positive, got ", bucket_bytes, " bytes");
  State& s = *state_;
  s.params = std::move(params);
  s.bucket_of.assign(s.params.size(), 0);
  // Reverse registration order: backward produces the last layers' gradients first. A bucket holds
  // one wire dtype (under O2 the BatchNorm parameters stay f32 between half convolutions).
  State::Bucket current;
  const Device device = comm.device();
  auto close = [&] {
    if (current.params.empty()) return;
    if (device.is_cuda()) current.device_buffer = Tensor::zeros({current.values}, current.dtype, device);
    else current.buffer.assign(static_cast<size_t>(current.count()) * current.element(), 0);
    s.buckets.push_back(std::move(current));
    current = State::Bucket{};
  };
  for (size_t i = s.params.size(); i-- > 0;) {
    const Tensor& p = s.params[i];
    SEG_CHECK(p.device() == device, device, "data-parallel gradients of ", p.str(), ": this rank's communicator (",
              comm.describe(), ") moves tensors on ", device.str());
    const DType dt = gradient_wire_dtype(p.dtype(), wire);
    if (!current.params.empty() && current.dtype != dt) close();
    current.dtype = dt;
    s.bucket_of[i] = s.buckets.size();
    current.params.push_back(i);
    current.offsets.push_back(current.values);
    current.values += p.numel();
    if (current.values * static_cast<int64_t>(dtype_size(dt)) >= bucket_bytes) close();
  }
  close();
  std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < s.params.size(); ++i) {
    s.params[i].add_grad_ready_hook([weak, i](const Tensor&) {
      if (auto st = weak.lock()) st->on_ready(i);
    });
  }
}

GradientAllReduce::~GradientAllReduce() {
  // Pending requests complete in their destructors (MPI needs the buffers until then).
  for (State::Bucket& b : state_->buckets) b.pending.reset();
}

void GradientAllReduce::set_sync(bool on) { state_->sync = on; }

void GradientAllReduce::finish() {
  State& s = *state_;
  if (s.buckets.size() == 1 && !s.buckets[0].pending) {
    State::Bucket& b = s.buckets[0];
    s.pack(b);
    s.comm.allreduce_sum_typed(b.data(), b.count(), b.dtype);
  } else {
    for (State::Bucket& b : s.buckets)
      if (!b.pending) s.pack_and_start(b);  // a bucket some of whose parameters got no gradient
  }
  last_started_in_backward_ = 0;
  for (State::Bucket& b : s.buckets) {
    if (b.pending) b.pending->wait();
    s.unpack(b);
    if (b.started_by_hook) ++last_started_in_backward_;
    b.pending.reset();
    b.ready = 0;
    b.started_by_hook = false;
    b.done = false;
  }
}

GradientAllReduce::Stats GradientAllReduce::stats() const {
  Stats out;
  out.buckets = static_cast<int64_t>(state_->buckets.size());
  out.started_in_backward = last_started_in_backward_;
  for (const State::Bucket& b : state_->buckets) {
    out.bytes += b.count() * static_cast<int64_t>(b.element());
    if (is_half(b.dtype)) ++out.half_buckets;
  }
  return out;
}

}  // namespace seg
