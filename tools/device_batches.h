// DeviceBatches: the training loop's batches on its device, the next one already on its way.
//
// The loader hands out batches in pinned host memory (data/batch_memory.h). On a GPU, next() returns
// the current batch on the device and immediately issues the host-to-device copy of the following
// one on the device's copy stream (core/stream.h), so that copy overlaps the current step's kernels.
// The compute stream waits for the copy with an event before it uses the batch, and the batch's
// device blocks are recorded on the compute stream, so the caching allocator does not hand them to
// the copy stream again until the step that read them is done (core/allocator.h). On the CPU it is
// the loader itself. Images are converted to the model's input dtype on the device.
//
// An iteration may hold several sub-batches for this process (TRAIN.sub_batches_per_rank): next()
// returns them one at a time, in order, and draws the loader's next iteration after the last one.
#pragma once

#include <deque>
#include <utility>

#include <memory>
#include <optional>

#include "core/device.h"
#include "core/stream.h"
#include "data/train_loader.h"

namespace seg::cli {

struct DeviceBatch {
  Tensor images;            // [B, H, W, 3] in the model's input dtype, on the device
  Tensor labels;            // i32 [B, h, w] on the device
  int64_t images_count = 0;
  double wait_seconds = 0;  // time the loader made the caller wait for this batch
};

class DeviceBatches {
 public:
  DeviceBatches(data::TrainLoader& loader, Device device, DType input_dtype);
  DeviceBatch next();

 private:
  struct InFlight {
    DeviceBatch batch;
    std::unique_ptr<Event> copied;  // recorded on the copy stream after the copies
  };
  InFlight upload(data::TrainSubBatch sub_batch, double wait_seconds);
  // The next sub-batch on the host, and how long the loader made us wait for it.
  std::pair<data::TrainSubBatch, double> next_host();

  data::TrainLoader& loader_;
  std::deque<data::TrainSubBatch> host_;  // the current iteration's sub-batches not handed out yet
  Device device_;
  DType input_dtype_;
  std::optional<InFlight> pending_;
};

}  // namespace seg::cli
